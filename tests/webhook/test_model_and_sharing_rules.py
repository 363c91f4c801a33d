"""The rules about the model a pod serves and the sharing modes it may land on, with the arithmetic, and
what each mode of the webhook does with them (warn, enforce, mutate)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.model.pods import pod_request
from extender.sources.snapshot import parse_snapshot
from tests.webhook.test_admission_api import review
from tests.webhook.test_rules import SIMULATED, T4, pod
from webhook.rules import ClusterView, Finding, evaluate_rules, workload_from

A100_40 = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.memory": "40960"}
MPS = {"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "mps"}
SHARED = ClusterView(
    tuple(
        parse_snapshot(
            {
                "nodes": [
                    {"name": "a100-mps", "gpus": 16, "labels": {**A100_40, **MPS, "pool": "mps"}},
                    {
                        "name": "a100-single",
                        "gpus": 14,
                        "labels": {
                            "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb",
                            "nvidia.com/mig.strategy": "single",
                            "pool": "single",
                        },
                    },
                    {"name": "a30-mixed", "gpus": 0, "mig": {"1g.6gb": 4}, "labels": {"pool": "mixed"}},
                ]
            }
        )
        .cluster("t")
        .nodes()
    )
)


def findings(template: dict[str, Any], view: ClusterView = SIMULATED) -> dict[str, Finding]:
    found = evaluate_rules(workload_from("Pod", "p", "ml", template, pod_request(template)), view)
    assert all(len(f.message) <= 120 for f in found), [f.message for f in found]
    return {f.code: f for f in found}


H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
LLAMA_8B = ["--model", "meta-llama/Llama-3.1-8B-Instruct"]


@pytest.mark.parametrize(
    ("args", "gpus", "message"),
    [
        # TP 4 × PP 1 = 4 GPUs, asks for 1: the server cannot start.
        (
            [*LLAMA_8B, "--tensor-parallel-size", "4"],
            1,
            "Llama-3.1-8B-Instruct runs TP 4 × PP 1 = 4 GPUs but asks for 1",
        ),
        # TP 2 × PP 2 = 4 GPUs, asks for 8: four sit idle.
        ([*LLAMA_8B, "-tp", "2", "-pp", "2"], 8, "runs TP 2 × PP 2 = 4 GPUs but asks for 8"),
        # TP 2 × PP 1 × DP 2 = 4.
        ([*LLAMA_8B, "-tp", "2", "-dp", "2"], 2, "runs TP 2 × PP 1 × DP 2 = 4 GPUs but asks for 2"),
    ],
)
def test_parallelism_that_disagrees_with_the_gpus_requested_is_an_error(
    args: list[str], gpus: int, message: str
) -> None:
    f = findings(pod(gpus, args, selector=H100))["parallelism-mismatch"]
    assert f.severity == "error" and message in f.message


def test_parallelism_that_matches_is_not_a_finding() -> None:
    assert "parallelism-mismatch" not in findings(pod(4, [*LLAMA_8B, "-tp", "4"], selector=H100))
    # llama.cpp spreads over whatever it gets: no parallel size to disagree with.
    llama_cpp = pod(2, ["llama-server", "-m", "/m/llama-3.1-8b-Q4_K_M.gguf"], selector=H100)
    assert "parallelism-mismatch" not in findings(llama_cpp)


def test_tensor_parallelism_over_time_sliced_replicas_is_an_error_where_only_those_are_eligible() -> None:
    f = findings(pod(4, [*LLAMA_8B, "--tensor-parallel-size", "4"], selector=T4))["tp-on-shared-gpu"]
    assert f.severity == "error"
    assert f.message == "4-way tensor/pipeline parallelism over time-sliced replicas (t4-ts-a): ranks need whole GPUs"
    # The redundant, softer time-slicing warning steps aside.
    assert "timeslice-multi-gpu" not in findings(pod(4, [*LLAMA_8B, "-tp", "4"], selector=T4))


def test_tensor_parallelism_is_only_a_warning_where_whole_gpus_are_eligible_too() -> None:
    f = findings(pod(2, [*LLAMA_8B, "-tp", "2"]))["tp-on-shared-gpu"]
    assert f.severity == "warning" and f.message.endswith("other nodes have them")


@pytest.mark.parametrize(
    ("pool", "gpus", "mig", "code", "message"),
    [
        # MPS: each client gets 40 GB / 4 = 10 GB; Llama 8B needs 16 × 1.2 = 19.2 GB.
        ("mps", 1, None, "mps-memory", "needs 19 GB/GPU (inferred); MPS on a100-mps caps a pod at 10 GB (40 GB / 4)"),
        # Tensor parallelism over MPS replicas or MIG slices (single strategy).
        ("mps", 2, None, "tp-on-shared-gpu", "2-way tensor/pipeline parallelism over MPS replicas (a100-mps)"),
        ("single", 2, None, "tp-on-shared-gpu", "2-way tensor/pipeline parallelism over MIG slices (a100-single)"),
        # Mixed strategy: 2 × mig-1g.6gb with TP 2.
        ("mixed", 0, "1g.6gb", "tp-on-shared-gpu", "2-way tensor/pipeline parallelism over MIG slices"),
    ],
)
def test_each_sharing_mode_names_what_its_slots_cannot_do(
    pool: str, gpus: int, mig: str | None, code: str, message: str
) -> None:
    args = [*LLAMA_8B, "-tp", "2"] if code == "tp-on-shared-gpu" else LLAMA_8B
    template = pod(gpus or None, args, selector={"pool": pool}, mig=mig)
    if mig:
        template["spec"]["containers"][0]["resources"]["limits"][f"nvidia.com/mig-{mig}"] = "2"
    f = findings(template, SHARED)[code]
    assert f.severity == "error" and message in f.message


def test_several_mig_slices_without_parallelism_are_warned_that_they_cannot_talk() -> None:
    template = pod(None, selector={"pool": "mixed"}, mig="1g.6gb")
    template["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-1g.6gb"] = "2"
    f = findings(template, SHARED)["mig-multi-slice"]
    assert f.severity == "warning" and f.message.startswith("asks for 2 MIG slices: MIG instances have no GPU-to-GPU")
    assert "mig-multi-slice" not in findings(pod(None, selector={"pool": "mixed"}, mig="1g.6gb"), SHARED)


def test_a_model_too_big_for_its_mig_slice_is_told_the_smallest_profile_that_holds_it() -> None:
    # 8 B × 2 × 1.2 = 19.2 GB > 6 GB; the smallest profile of the table with ≥ 19.2 GB is 1g.20gb.
    f = findings(pod(None, LLAMA_8B, selector={"pool": "mixed"}, mig="1g.6gb"), SHARED)["model-does-not-fit"]
    assert "does not fit a MIG 1g.6gb slice" in f.message and f.advice == "use a MIG 1g.20gb slice"


def test_advice_counts_physical_gpus_and_says_when_a_count_is_replicas() -> None:
    f = findings(pod(100))["exceeds-largest-node"]
    # t4-ts-a advertises 16 = 4 T4s × 4 replicas; the largest physical count is 8.
    assert f.severity == "error"
    assert f.message == "asks for 100 GPUs; nodes it may use have at most 8 (t4-ts-a: 16 time-sliced replicas of 4)"
    assert f.advice.startswith("request at most 8 nvidia.com/gpu per pod")


def enforce(api: TestClient, template: dict[str, Any], path: str = "/admission/validate/enforce") -> dict[str, Any]:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}, **template}
    reply: dict[str, Any] = api.post(path, json=review(obj)).json()["response"]
    return reply


def test_warn_allows_enforce_denies_and_mutate_annotates_tensor_parallelism_on_time_slices(api: TestClient) -> None:
    template = pod(4, [*LLAMA_8B, "--tensor-parallel-size", "4"], selector=T4)
    warned = enforce(api, template, "/admission/validate")
    assert warned["allowed"] is True and any(w.startswith("tp-on-shared-gpu: ") for w in warned["warnings"])
    denied = enforce(api, template)
    assert denied["allowed"] is False and "tp-on-shared-gpu" in denied["status"]["message"]
    mutated = enforce(api, template, "/admission/mutate")
    ops = json.loads(base64.b64decode(mutated["patch"]))
    written = [op["value"] for op in ops if op["path"].startswith("/metadata/annotations")]
    assert any("tp-on-shared-gpu" in json.dumps(value) for value in written), ops


def test_enforce_denies_a_parallelism_mismatch(api: TestClient) -> None:
    denied = enforce(api, pod(1, [*LLAMA_8B, "-tp", "2"], selector=H100))
    assert denied["allowed"] is False and "parallelism-mismatch" in denied["status"]["message"]


@pytest.mark.parametrize(
    ("product", "memory", "advice"),
    [
        # 7 B × 0.5 (AWQ) × 1.2 = 4.2 GB ≤ 40 % of 80 GB; the H100's smallest profile with ≥ 4.2 GB: 1g.10gb.
        ("NVIDIA-H100-80GB-HBM3", "81559", "a MIG 1g.10gb slice would do (enable MIG on these GPUs)"),
        # An L40S has no MIG: share it instead.
        ("NVIDIA-L40S", "46068", "share the GPU (time-slicing or MPS) instead of taking all of it"),
    ],
)
def test_a_small_model_on_a_whole_gpu_is_advised_from_its_products_mig_profiles(
    product: str, memory: str, advice: str
) -> None:
    doc = {
        "nodes": [
            {"name": "n", "gpus": 8, "labels": {"nvidia.com/gpu.product": product, "nvidia.com/gpu.memory": memory}}
        ]
    }
    view = ClusterView(tuple(parse_snapshot(doc).cluster("t").nodes()))
    f = findings(pod(1, ["--model", "Qwen/Qwen2.5-7B-Instruct-AWQ"]), view)["whole-gpu-small-model"]
    assert f.advice.startswith(advice)
