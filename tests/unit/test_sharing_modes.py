"""All four ways a node hands out ``nvidia.com/gpu`` — whole GPUs, time-slicing, MPS, MIG (single and
mixed) — and what each one gives a pod: physical GPUs, memory per slot, and the scheduler's verdict."""

from __future__ import annotations

from typing import Any

import pytest

from extender.cluster.state import NodeState
from extender.model.pods import PodRequest, pod_request
from extender.scoring import ScoringPolicy, Verdict, evaluate
from extender.sources.snapshot import parse_snapshot

NOW = 1_796_000_000.0
A100_40 = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.memory": "40960"}
NODES: dict[str, dict[str, Any]] = {
    "whole": {"gpus": 4, "labels": A100_40},
    "time-sliced": {
        "gpus": 16,
        "labels": {**A100_40, "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"},
    },
    "mps": {
        "gpus": 16,
        "labels": {**A100_40, "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "mps"},
    },
    "mig-single": {
        "gpus": 14,
        "labels": {
            "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb",
            "nvidia.com/mig.strategy": "single",
            "nvidia.com/gpu.memory": "19968",
        },
    },
    "mig-mixed": {
        "gpus": 0,
        "mig": {"1g.5gb": 7, "3g.20gb": 4},
        "labels": {**A100_40, "nvidia.com/mig.strategy": "mixed"},
    },
}


def node(kind: str) -> NodeState:
    doc = {"nodes": [{"name": kind, **NODES[kind]}]}
    return next(iter(parse_snapshot(doc).cluster("t").nodes()))


@pytest.mark.parametrize(
    ("kind", "sharing", "physical", "slot_mib"),
    [
        ("whole", "whole GPU", 4, 40960),  # 4 A100s of 40 GB
        ("time-sliced", "time-sliced replica", 4, 40960),  # 16 replicas / 4 = 4 GPUs; replicas share all 40 GB
        ("mps", "MPS replica", 4, 10240),  # 16 / 4 = 4 GPUs; each client capped at 40,960 / 4 = 10,240 MiB
        ("mig-single", "MIG slice", 7, 19968),  # 14 slices of 3g.20gb, 2 per A100 → 7 GPUs; the slice's 19,968 MiB
        ("mig-mixed", "whole GPU", 0, 40960),  # slices are their own resources; no nvidia.com/gpu at all
    ],
)
def test_what_one_nvidia_com_gpu_is_in_each_sharing_mode(kind: str, sharing: str, physical: int, slot_mib: int) -> None:
    n = node(kind)
    assert (n.sharing, n.physical_gpus, n.slot_memory_mib) == (sharing, physical, slot_mib)


def verdict(kind: str, pod: dict[str, Any]) -> Verdict:
    return evaluate(pod_request(pod), node(kind), kind, None, ScoringPolicy(), NOW)


def serving(args: list[str], limits: dict[str, str], memory: str | None = None) -> dict[str, Any]:
    container = {"name": "c", "image": "vllm/vllm-openai", "args": args, "resources": {"limits": limits}}
    annotations = {"gpu-advisor.io/gpu-memory": memory} if memory else {}
    return {"metadata": {"annotations": annotations}, "spec": {"containers": [container]}}


QWEN_14B = ["--model", "Qwen/Qwen2.5-14B-Instruct"]  # 14 B × 2 = 28 GB = 26,703 MiB of weights
TP2 = ["--model", "Qwen/Qwen2.5-7B-Instruct", "-tp", "2"]


@pytest.mark.parametrize(
    ("kind", "pod", "fits", "reason"),
    [
        # 26,703 MiB of weights ≤ 40,960; 0.9 × 40,960 − 26,703 = 10,161 ≥ 5,341 wanted (20 %): fits.
        ("whole", serving(QWEN_14B, {"nvidia.com/gpu": "1"}), True, "scored on counts alone"),
        ("time-sliced", serving(QWEN_14B, {"nvidia.com/gpu": "1"}), True, "time-sliced ×4"),
        # Under MPS a client has 10,240 MiB < 26,703 of weights: it cannot start.
        ("mps", serving(QWEN_14B, {"nvidia.com/gpu": "1"}), False, "weights ≈ 28 GB/GPU do not fit its 10 GiB MPS"),
        # A 3g.20gb slice holds 19,968 MiB < 26,703.
        ("mig-single", serving(QWEN_14B, {"nvidia.com/gpu": "1"}), False, "do not fit its 20 GiB MIG slices"),
        # Declared 12 GiB > the 10 GiB an MPS client gets: refused, as declared memory always was.
        ("mps", serving([], {"nvidia.com/gpu": "1"}, "12Gi"), False, "pod declares 12 GiB per GPU, its MPS replicas"),
        # The device plugin gives an MPS pod one replica at most.
        ("mps", serving([], {"nvidia.com/gpu": "2"}), False, "MPS gives a pod at most 1 replica, pod needs 2"),
        # Tensor parallelism over 2 replicas, or 2 MIG slices: ranks cannot talk.
        ("time-sliced", serving(TP2, {"nvidia.com/gpu": "2"}), False, "2 time-sliced replicas cannot run 2-way"),
        ("mps", serving(TP2, {"nvidia.com/gpu": "2"}), False, "2 MPS replicas cannot run 2-way"),
        ("mig-single", serving(TP2, {"nvidia.com/gpu": "2"}), False, "2 MIG slices cannot run 2-way"),
        ("whole", serving(TP2, {"nvidia.com/gpu": "2"}), True, "scored on counts alone"),
        # Mixed strategy: the slice is its own resource and the plan counts slices.
        ("mig-mixed", serving([], {"nvidia.com/mig-3g.20gb": "1"}), True, "MIG 3g.20gb: 4 of 4 free"),
        # 28 GB of weights > a 1g.5gb slice's 5 GiB; two slices cannot run TP 2.
        ("mig-mixed", serving(QWEN_14B, {"nvidia.com/mig-1g.5gb": "1"}), False, "MIG 1g.5gb (5 GiB) is too small"),
        ("mig-mixed", serving(TP2, {"nvidia.com/mig-1g.5gb": "2"}), False, "2 MIG slices cannot run 2-way"),
    ],
)
def test_the_scheduler_verdict_in_each_sharing_mode(kind: str, pod: dict[str, Any], fits: bool, reason: str) -> None:
    v = verdict(kind, pod)
    assert v.fits is fits and reason in v.reason, v.reason


def test_a_model_that_fits_its_weights_but_not_its_kv_cache_keeps_the_node_with_a_lower_score() -> None:
    v100 = {
        "nodes": [
            {
                "name": "v100",
                "machine": "dgx1-v100",
                "labels": {"nvidia.com/gpu.memory": "16384", "nvidia.com/gpu.product": "Tesla-V100-SXM2-16GB"},
            }
        ]
    }
    n = next(iter(parse_snapshot(v100).cluster("t").nodes()))
    small = serving(["--model", "Qwen/Qwen2.5-3B-Instruct"], {"nvidia.com/gpu": "1"})
    big = serving(["--model", "meta-llama/Llama-3.1-8B-Instruct"], {"nvidia.com/gpu": "1"})
    roomy, tight = (evaluate(pod_request(p), n, "v100", None, ScoringPolicy(), NOW) for p in (small, big))
    # 8 B × 2 = 15,259 MiB of weights > 0.9 × 16,384 = 14,746 that vLLM takes: room 0, so every plan
    # component is × 0 and only the neutral headroom (0.5 × 0.15 / 1.0 = 0.075) is left: score round(0.75) = 1.
    assert tight.fits and tight.score == 1 and roomy.score > tight.score
    assert tight.reason.startswith("Llama-3.1-8B-Instruct bf16 ≈ 16 GB/GPU + KV cache on a 16 GB V100: no room")
    assert set(tight.breakdown) == set(roomy.breakdown)


def test_a_request_without_a_model_is_judged_as_before() -> None:
    plain = PodRequest(gpus=1)
    assert verdict(
        "mps", {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    ).fits
    assert plain.model is None
