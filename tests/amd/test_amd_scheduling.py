"""AMD and NVIDIA nodes in one cluster: each pod is judged only among its own vendor's nodes, and an
XGMI board is judged exactly like an NVLink board."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.model.machines import bundled_machines
from extender.model.pods import PodSpecError, pod_request
from extender.model.smi_topo import parse_topo_matrix
from extender.placement import best_placement
from gpu_advisor.cli.scheduler_config import managed_resources

NODES = ["dgx1-v100-a", "dgx1-v100-b", "hgx-h100-a", "l40s-a", "a100-mig-a", "t4-ts-a", "mi300x-a"]
NVIDIA_NODES = [n for n in NODES if n != "mi300x-a"]


def pod(limits: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "image": "rocm/pytorch", "resources": {"limits": limits}}]},
    }


def args(limits: dict[str, str]) -> dict[str, Any]:
    return {"Pod": pod(limits), "Nodes": None, "NodeNames": NODES}


def test_an_amd_pod_passes_only_the_amd_node_and_the_others_say_why(fitting_api: TestClient) -> None:
    result = fitting_api.post("/scheduler/filter", json=args({"amd.com/gpu": "4"})).json()
    assert result["NodeNames"] == ["mi300x-a"]
    refused = result["FailedAndUnresolvableNodes"]
    assert set(refused) == set(NVIDIA_NODES)
    assert refused["hgx-h100-a"] == "offers nvidia.com/gpu, pod asks for amd.com/gpu"
    assert refused["a100-mig-a"] == "has no amd.com/gpu", "only MIG slices there"


def test_an_nvidia_pod_never_passes_the_amd_node(fitting_api: TestClient) -> None:
    for count in ("1", "2", "4", "8"):
        result = fitting_api.post("/scheduler/filter", json=args({"nvidia.com/gpu": count})).json()
        assert "mi300x-a" not in (result["NodeNames"] or [])
        assert result["FailedAndUnresolvableNodes"]["mi300x-a"] == "offers amd.com/gpu, pod asks for nvidia.com/gpu"


def test_an_xgmi_board_ranks_like_an_nvlink_board_with_the_same_gpus_free(api: TestClient) -> None:
    # Both boards have GPUs 0 and 1 held and 2-7 free, all pairs on one fabric: the same placement
    # problem, so the same score for a 4-GPU pod of each vendor.
    amd = {h["Host"]: h["Score"] for h in api.post("/scheduler/prioritize", json=args({"amd.com/gpu": "4"})).json()}
    nvidia = {
        h["Host"]: h["Score"] for h in api.post("/scheduler/prioritize", json=args({"nvidia.com/gpu": "4"})).json()
    }
    assert amd["mi300x-a"] == nvidia["hgx-h100-a"] == 9
    assert amd["mi300x-a"] > 0 and all(amd[n] == 0 for n in NVIDIA_NODES)
    assert nvidia["mi300x-a"] == 0


def test_the_dry_run_gives_xgmi_reasons(api: TestClient) -> None:
    answer = api.post("/v1/dry-run", json={"apiVersion": "v1", "kind": "Pod", **pod({"amd.com/gpu": "4"})}).json()
    assert answer["verdict"].startswith("schedulable on 1 node; best: mi300x-a with XGMI quad 4-5-6-7")


def test_the_best_set_on_the_mi300x_board_is_the_one_on_the_hgx_board() -> None:
    machines = bundled_machines()
    mi300x, h100 = parse_topo_matrix(machines["mi300x"]), parse_topo_matrix(machines["hgx-h100"])
    for k in (1, 2, 4, 6):
        amd, nvidia = best_placement(mi300x, k, free=range(2, 8)), best_placement(h100, k, free=range(2, 8))
        assert amd.gpus == nvidia.gpus, k
        # A pair scores its PCIe level plus 100 per link: NODE 20 + 1 XGMI link = 120 per same-socket pair.
        if k == 2:
            assert amd.score == 20 + 100 * 1


def test_a_pod_reads_its_vendors_resource() -> None:
    request = pod_request(pod({"amd.com/gpu": "2"}))
    assert (request.gpus, request.resource, request.other) == (2, "amd.com/gpu", ())
    assert pod_request(pod({"nvidia.com/gpu": "2"})).resource == "nvidia.com/gpu"


def test_a_pod_asking_for_both_vendors_gets_a_clear_error() -> None:
    both = re.escape("asks for both nvidia.com/* and amd.com/* resources; one pod's GPUs come from one vendor")
    with pytest.raises(PodSpecError, match=both):
        pod_request(pod({"amd.com/gpu": "1", "nvidia.com/gpu": "1"}))


def test_admission_rules_look_only_at_nodes_of_the_pods_vendor(api: TestClient) -> None:
    # 4 GPUs fit no NVIDIA node better than the time-sliced T4s' 16 replicas, which warns for NVIDIA pods;
    # an AMD pod never goes there, so it gets no such warning.
    nvidia = api.post("/v1/dry-run", json={"apiVersion": "v1", "kind": "Pod", **pod({"nvidia.com/gpu": "4"})}).json()
    amd = api.post("/v1/dry-run", json={"apiVersion": "v1", "kind": "Pod", **pod({"amd.com/gpu": "4"})}).json()
    assert "timeslice-multi-gpu" in str(nvidia) and "timeslice-multi-gpu" not in str(amd)


def test_kube_scheduler_hands_the_advisor_amd_pods_too() -> None:
    names = managed_resources()
    assert "amd.com/gpu" in names and "amd.com/cpx_nps4" in names and "nvidia.com/gpu" in names


def test_the_console_draws_the_mi300x_as_an_xgmi_mesh(api: TestClient) -> None:
    wiring = api.get("/v1/console/nodes/mi300x-a").json()["wiring"]
    assert (wiring["link"], wiring["nvswitch"]) == ("XGMI", False), "every pair linked, but no switch"
    assert sum(1 for link in wiring["links"] if link["nvlinks"] == 1) == 28  # 8 × 7 / 2 pairs
