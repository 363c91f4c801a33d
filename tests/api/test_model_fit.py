"""The two cases of a new user on the simulated cluster, end to end: Llama-3.1-8B in bf16 must not rank
best on a 16 GB V100, and Llama-3-70B in bf16 goes only where its weights fit — the same answer from
/scheduler/filter + /scheduler/prioritize, /v1/dry-run and ``gpu-advisor explain``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from gpu_advisor.cli import main
from tests.api.test_extender_api import SIMULATED


def deployment(model: str, gpus: int, *extra: str) -> dict[str, Any]:
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.9.0",
        "args": ["--model", model, *extra],
        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
    }
    return {
        "kind": "Deployment",
        "metadata": {"name": "llm", "namespace": "serving"},
        "spec": {"template": {"metadata": {}, "spec": {"containers": [container]}}},
    }


LLAMA_8B = deployment("meta-llama/Llama-3.1-8B-Instruct", 1)
LLAMA_70B_TP4 = deployment("meta-llama/Meta-Llama-3-70B-Instruct", 4, "--tensor-parallel-size", "4")
LLAMA_70B = deployment("meta-llama/Meta-Llama-3-70B-Instruct", 1)
NO_ROOM = "Llama-3.1-8B-Instruct bf16 ≈ 16 GB/GPU + KV cache on a 16 GB V100: no room for KV cache"


def scheduler_args(manifest: dict[str, Any]) -> dict[str, Any]:
    template = manifest["spec"]["template"]
    pod = {"metadata": {"name": "llm-0", "namespace": "serving"}, "spec": template["spec"]}
    return {"Pod": pod, "Nodes": None, "NodeNames": SIMULATED}


def scores(api: TestClient, manifest: dict[str, Any]) -> dict[str, int]:
    reply = api.post("/scheduler/prioritize", json=scheduler_args(manifest))
    assert reply.status_code == 200
    return {h["Host"]: h["Score"] for h in reply.json()}


def test_8b_bf16_ranks_below_every_gpu_with_room_for_its_kv_cache_on_prioritize(fitting_api: TestClient) -> None:
    got = scores(fitting_api, LLAMA_8B)
    # 8 B × 2 bytes = 16 GB = 15,259 MiB of weights; vLLM takes 0.9 × 16,384 = 14,746 MiB of a V100 and
    # 0.9 × 15,360 of a T4: no room for a KV cache, so the plan's terms are × 0 and only headroom is left.
    # The H100 (80 GB) and L40S (45 GB) hold 15,259 + 3,052 (20 %) easily.
    roomy = min(got["hgx-h100-a"], got["l40s-a"])
    assert all(got[n] < roomy for n in ("dgx1-v100-a", "dgx1-v100-b", "t4-ts-a")), got
    filtered = fitting_api.post("/scheduler/filter", json=scheduler_args(LLAMA_8B)).json()
    assert "dgx1-v100-a" in filtered["NodeNames"], "the weights fit: a lower score, not a filter"


def test_8b_bf16_is_explained_by_the_dry_run(api: TestClient) -> None:
    answer = api.post("/v1/dry-run", json=LLAMA_8B).json()
    assert answer["verdict"] == "schedulable on 5 nodes; best: hgx-h100-a with GPU 2"
    reasons = {r["node"]: r["reason"] for r in answer["ranked"]}
    assert reasons["dgx1-v100-a"].startswith(NO_ROOM) and reasons["dgx1-v100-b"].startswith(NO_ROOM)


def test_70b_bf16_over_4_gpus_goes_only_where_35_gb_per_gpu_fits(fitting_api: TestClient) -> None:
    filtered = fitting_api.post("/scheduler/filter", json=scheduler_args(LLAMA_70B_TP4)).json()
    # 70 B × 2 = 140 GB / TP 4 = 35 GB of weights per GPU: more than a V100's or T4's 16/15 GB.
    assert filtered["NodeNames"] == ["hgx-h100-a", "l40s-a"]
    unresolvable = filtered["FailedAndUnresolvableNodes"]
    assert unresolvable["dgx1-v100-a"] == (
        "Meta-Llama-3-70B-Instruct bf16 weights ≈ 35 GB/GPU do not fit its 16 GiB GPUs"
    )
    got = scores(fitting_api, LLAMA_70B_TP4)
    assert got["hgx-h100-a"] > got["l40s-a"]  # an NVLink quad over a PCIe one
    answer = fitting_api.post("/v1/dry-run", json=LLAMA_70B_TP4).json()
    assert answer["verdict"] == "schedulable on 2 nodes; best: hgx-h100-a with NVLink quad 4-5-6-7"


def test_70b_bf16_on_one_gpu_is_unschedulable_and_the_verdict_names_the_nodes(api: TestClient) -> None:
    answer = api.post("/v1/dry-run", json=LLAMA_70B).json()
    assert answer["schedulable"] is False
    # 140 GB of weights exceed every single GPU; reasons grouped by node, most nodes first.
    assert answer["verdict"].startswith(
        "unschedulable: dgx1-v100-a, dgx1-v100-b: Meta-Llama-3-70B-Instruct bf16 weights ≈ 140 GB/GPU"
        " do not fit its 16 GiB GPUs; "
    )
    # Five different reasons: the four holding for most nodes are shown, then "…".
    assert answer["verdict"].count("; ") == 3 and answer["verdict"].endswith(" …")
    codes = {f["code"] for f in answer["findings"]}
    assert "model-does-not-fit" in codes


def test_an_impossible_count_is_summarised_by_node(api: TestClient) -> None:
    manifest = deployment("busybox", 100)
    manifest["spec"]["template"]["spec"]["containers"][0]["args"] = ["sleep", "1"]
    verdict = api.post("/v1/dry-run", json=manifest).json()["verdict"]
    assert verdict == (
        "unschedulable: dgx1-v100-a, dgx1-v100-b, hgx-h100-a +1 more: has 8 GPUs in all, pod needs 100;"
        " t4-ts-a: has 16 GPUs in all, pod needs 100; a100-mig-a: has no nvidia.com/gpu;"
        " mi300x-a: offers amd.com/gpu, pod asks for nvidia.com/gpu"
    )


@pytest.mark.parametrize(
    ("manifest", "code", "best"),
    [
        (LLAMA_8B, 0, "best: hgx-h100-a with GPU 2"),
        (LLAMA_70B_TP4, 0, "best: hgx-h100-a with NVLink quad 4-5-6-7"),
        (LLAMA_70B, 3, "unschedulable: dgx1-v100-a, dgx1-v100-b:"),
    ],
)
def test_explain_tells_the_same_story(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], manifest: dict[str, Any], code: int, best: str
) -> None:
    path = tmp_path / "llm.yaml"
    path.write_text(yaml.safe_dump(manifest))
    assert main(["explain", str(path)]) == code
    out = capsys.readouterr().out
    assert best in out
    if manifest is LLAMA_8B:
        assert next(line for line in out.splitlines() if line.startswith("dgx1-v100-a")).split()[1] == "2"
        assert NO_ROOM in out
    assert main(["explain", str(path), "--json"]) == code
    assert json.loads(capsys.readouterr().out)["schedulable"] is (code == 0)
