"""GPUs published and claimed through DRA are modelled like device-plugin GPUs: a claim for 2 GPUs is
judged like ``nvidia.com/gpu: 2``, and an allocated claim's devices are no longer free."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.advice.dryrun import dry_run
from extender.cluster.dra_view import DraObjects, node_through_slices, pod_through_claims
from extender.http.advisor import Advisor
from extender.model.devices import PcieLevel
from extender.model.dra import claim_gpu_count, claim_wants
from extender.model.pods import PodSpecError, pod_request
from extender.model.topology import GpuTopology
from extender.scoring import ScoringPolicy, judge_all
from extender.sources.snapshot import Snapshot, parse_snapshot
from gpu_advisor.app import create_app
from tests.dra.objects import cluster_items, load, pending_pod

NOW = 1_796_000_000.0


def snapshot(allocated: bool = True) -> Snapshot:
    return parse_snapshot({"apiVersion": "v1", "kind": "List", "items": cluster_items(allocated)}, now=NOW)


def plain_two_gpu_pod() -> dict[str, Any]:
    pod: dict[str, Any] = copy.deepcopy(load("extender-filter-dra-pod.json")["Pod"])
    del pod["spec"]["resourceClaims"]
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "2"}}
    return pod


def test_a_slice_gives_its_node_four_gpus_wired_by_pcie_root() -> None:
    node = snapshot().cluster("dra").node("dra-node-1")
    assert node is not None and node.topology is not None
    # the slice's productName, labelled as GPU Feature Discovery would
    assert (node.gpu_total, node.free_gpus, node.product) == (4, (0, 1, 2, 3), "NVIDIA-H100-80GB-HBM3")
    # gpu-0 and gpu-1 sit under pci0000:00, gpu-2 and gpu-3 under pci0000:10
    assert node.topology.link(0, 1).pcie == PcieLevel.PHB
    assert node.topology.link(1, 2).pcie == PcieLevel.SYS


def test_the_allocated_claims_two_gpus_are_held_by_its_pod() -> None:
    node = snapshot().cluster("dra").node("dra-node-2")
    assert node is not None
    assert node.free_gpus == (2, 3)  # gpu-0 and gpu-1 are the claim's
    assert [(p.key, p.request.gpus) for p in node.pods] == [("default/dra-pod", 2)]
    assert node.free_now == 4 - 2


@pytest.mark.parametrize(
    ("claim", "gpus"),
    [
        ({"resourceClaimName": "two-gpus"}, 2),  # the claim asks ExactCount 2 of gpu.nvidia.com
        ({"resourceClaimTemplateName": "one-gpu"}, 1),  # each pod's claim from the template asks 1
        ({"resourceClaimName": "nobody-made-this"}, 0),  # a claim the model does not know: no count
    ],
)
def test_a_pod_asks_for_the_gpus_its_claim_asks_for(claim: dict[str, str], gpus: int) -> None:
    pod = pod_through_claims(pending_pod(claim), snapshot(allocated=False).dra)
    assert pod_request(pod).gpus == gpus


def test_a_pod_asking_two_gpus_through_a_claim_is_ranked_like_an_nvidia_gpu_2_pod() -> None:
    snap = snapshot(allocated=False)
    state = snap.cluster("dra")
    names = ["dra-node-1", "dra-node-2"]

    def verdicts(pod: dict[str, Any]) -> list[tuple[str, bool, int, tuple[int, ...] | None, str]]:
        request = pod_request(pod_through_claims(pod, snap.dra))
        found = judge_all(request, names, state.nodes_by_name(), None, ScoringPolicy(), NOW)
        return [(v.node, v.fits, v.score, v.gpus, v.reason) for v in found]

    through_claim = verdicts(pending_pod({"resourceClaimName": "two-gpus"}))
    assert through_claim == verdicts(plain_two_gpu_pod())
    assert all(gpus in ((0, 1), (2, 3)) for _, _, _, gpus, _ in through_claim)  # a pair under one PCIe root


@pytest.mark.parametrize(
    ("request_body", "gpus"),
    [
        ({"exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 2}}, 2),
        ({"exactly": {"deviceClassName": "gpu.nvidia.com"}}, 1),  # count defaults to 1
        ({"firstAvailable": [{"name": "big", "deviceClassName": "gpu.nvidia.com", "count": 4}]}, 4),
        ({"exactly": {"deviceClassName": "nic.example.com", "count": 2}}, 0),  # not a GPU class
    ],
)
def test_a_claim_spec_counts_its_gpu_requests(request_body: dict[str, Any], gpus: int) -> None:
    assert claim_gpu_count({"devices": {"requests": [{"name": "r", **request_body}]}}) == gpus


def test_all_gpus_of_a_node_is_no_count_and_says_so() -> None:
    spec = {
        "devices": {
            "requests": [{"name": "r", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}]
        }
    }
    with pytest.raises(PodSpecError, match="asks for all GPUs of a node"):
        claim_gpu_count(spec)


def test_devices_are_matched_to_the_agents_topology_by_uuid() -> None:
    # The agent numbers the GPUs the other way round: its GPU 3 is the driver's gpu-0.
    from extender.model.devices import Gpu

    agent = GpuTopology([Gpu(index=3 - i, uuid=f"GPU-dra-node-2-000{i}") for i in range(4)])
    node = {"metadata": {"name": "dra-node-2", "annotations": {"gpu-advisor.io/topology": agent.to_json()}}}
    dra = DraObjects.read(cluster_items())
    seen = node_through_slices(node, dra, NOW)
    assert '"free":[0,1]' in seen["metadata"]["annotations"]["gpu-advisor.io/free-gpus"]  # gpu-0, gpu-1 → 3, 2


def test_the_extender_ranks_the_captured_dra_pod_like_a_two_gpu_pod() -> None:
    snap = snapshot(allocated=False)
    advisor = Advisor(state=snap.cluster("dra"), telemetry=None, policy=ScoringPolicy(), clock=lambda: NOW)
    body = load("extender-prioritize-dra-pod.json")  # exactly what kube-scheduler sent
    plain = {**body, "Pod": plain_two_gpu_pod()}
    with TestClient(create_app(advisor), raise_server_exceptions=False) as api:
        passed = api.post("/scheduler/filter", json=load("extender-filter-dra-pod.json")).json()
        scores = api.post("/scheduler/prioritize", json=body).json()
        assert scores == api.post("/scheduler/prioritize", json=plain).json()
    # Both nodes fit; the filter passes the advisor's best, prioritize's top, for kube-scheduler to bind.
    assert passed["NodeNames"] == ["dra-node-2"] and passed["Error"] == ""
    assert {s["Host"] for s in scores} == {"dra-node-1", "dra-node-2"}
    assert max(scores, key=lambda s: s["Score"])["Host"] == "dra-node-2"
    assert all(s["Score"] > 0 for s in scores)  # judged: a pod asking no GPU gets 0 everywhere


def claim_with(*expressions: str) -> dict[str, Any]:
    selectors = [{"cel": {"expression": e}} for e in expressions]
    request = {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2, "selectors": selectors}}
    return {"devices": {"requests": [request]}}


@pytest.mark.parametrize(
    ("expression", "wants"),
    [
        ("device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'", ("NVIDIA H100 80GB HBM3", None)),
        ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0", (None, 40 * 1024)),
        ("device.attributes['gpu.nvidia.com'].architecture == 'Hopper'", (None, None)),  # left to kube-scheduler
    ],
)
def test_a_claims_cel_selectors_are_read_where_the_model_can_say_them(
    expression: str, wants: tuple[str | None, int | None]
) -> None:
    found = claim_wants(claim_with(expression))
    assert (found.product, found.memory_mib) == wants


def test_a_claim_for_more_memory_than_an_h100_has_fits_no_node() -> None:
    snap = snapshot(allocated=False)
    dra = DraObjects(
        snap.dra.gpus,
        snap.dra.held,
        {"default/big": claim_with("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('120Gi')) >= 0")},
        {},
    )
    pod = pod_through_claims(pending_pod({"resourceClaimName": "big"}), dra)
    assert pod["metadata"]["annotations"] == {"gpu-advisor.io/gpu-memory": f"{120 * 1024}Mi"}
    state = snap.cluster("dra")
    found = judge_all(pod_request(pod), ["dra-node-1"], state.nodes_by_name(), None, ScoringPolicy(), NOW)
    assert not found[0].fits


def test_a_claim_for_another_product_fits_no_h100_node() -> None:
    snap = snapshot(allocated=False)
    expression = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA B200'"
    dra = DraObjects(snap.dra.gpus, snap.dra.held, {"default/b200": claim_with(expression)}, {})
    pod = pod_through_claims(pending_pod({"resourceClaimName": "b200"}), dra)
    assert pod["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-B200"}
    answer = dry_run({"kind": "Pod", **pod}, snap.cluster("dra").nodes_by_name(), None, ScoringPolicy(), NOW)
    assert not answer.schedulable and {f.node for f in answer.filtered} == {"dra-node-1", "dra-node-2"}
    h100 = pod_through_claims(pending_pod({"resourceClaimName": "two-gpus"}), snap.dra)
    assert "nodeSelector" not in h100["spec"]  # a claim with no selector asks no product
