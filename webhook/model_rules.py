"""Admission advice about the model a pod serves: does it fit, does it waste, does it match its GPUs.

What the model needs is read once, with the pod's request (``extender.model.needs``), so these rules and
the scheduler's filter and score agree on the numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from extender.cluster.state import NodeState
from extender.model.mig_profiles import all_profiles, mig_product_for, profile_memory_gb
from extender.model.needs import ModelNeed
from webhook.workload import GB_PER_MIB, ClusterView, Finding, Workload

__all__ = ["model_does_not_fit", "parallelism_mismatch", "tp_on_shared_gpu", "whole_gpu_small_model"]

# Each server's own name for its tensor-parallel size.
_TP_FLAG = {"sglang": "--tp-size", "tgi": "--num-shard", "tensorrt-llm": "--tp_size"}


def _gb(mib: int | None) -> float:
    return (mib or 0) * GB_PER_MIB


def _gpu_nodes(nodes: Iterable[NodeState]) -> list[NodeState]:
    return [n for n in nodes if n.gpu_total > 0]


def _tp_flag(model: ModelNeed) -> str:
    return _TP_FLAG.get(model.framework, "--tensor-parallel-size")


def _mig_too_small(w: Workload, model: ModelNeed) -> list[Finding]:
    """A model asked onto MIG slices too small for it; the advice names the smallest profile that holds it."""
    need = model.need_per_gpu_gb
    for profile, _ in w.request.mig:
        if need <= profile_memory_gb(profile):
            continue
        bigger = [p for p in all_profiles() if profile_memory_gb(p) >= need]
        smallest = min(bigger, key=profile_memory_gb, default=None)
        advice = f"use a MIG {smallest} slice" if smallest else "use whole GPUs with tensor parallelism"
        return [
            Finding(
                "model-does-not-fit",
                "warning",
                f"{model.describe()} (+KV ≈ {need:.0f} GB) does not fit a MIG {profile} slice",
                advice,
            )
        ]
    return []


def model_does_not_fit(w: Workload, view: ClusterView) -> list[Finding]:
    model = w.model
    if model is None:
        return []
    if w.request.mig and not w.request.gpus:
        return _mig_too_small(w, model)
    nodes = [n for n in _gpu_nodes(view.eligible(w)) if n.slot_memory_mib]
    if not w.request.gpus or not nodes:
        return []
    largest = max(_gb(n.slot_memory_mib) for n in nodes)
    per_gpu = model.need_per_gpu_gb
    if per_gpu <= largest:
        return []
    gpus_needed = math.ceil(model.need_gb / largest)
    shards = 1 << (gpus_needed - 1).bit_length()  # tensor parallelism wants a power of two
    tp = model.split(w.request.gpus)
    where = f"one {largest:.0f} GB GPU" if tp == 1 else f"{tp} × {largest:.0f} GB GPUs"
    return [
        Finding(
            "model-does-not-fit",
            "warning",
            f"{model.describe()} (+20% ≈ {model.need_gb:.0f} GB) does not fit {where}",
            f"use {shards} GPUs with {_tp_flag(model)} {shards}, or a quantized (AWQ/FP8) model",
        )
    ]


def whole_gpu_small_model(w: Workload, view: ClusterView) -> list[Finding]:
    if w.request.gpus != 1 or w.request.mig:
        return []
    memory = w.memory_per_gpu_gb()
    nodes = [n for n in _gpu_nodes(view.eligible(w)) if n.gpu_memory_mib and n.sharing == "whole GPU"]
    if memory is None or not nodes:
        return []
    need, source = memory
    smallest = min(nodes, key=lambda n: n.gpu_memory_mib or 0)
    smallest_gpu = _gb(smallest.gpu_memory_mib)
    if need > 0.4 * smallest_gpu:
        return []
    offered = sorted({p for n in view.nodes for p in n.mig_profiles()}, key=profile_memory_gb)
    fits = [p for p in offered if profile_memory_gb(p) >= need]
    if fits:
        advice = f"request nvidia.com/mig-{fits[0]} instead of a whole GPU"
    else:
        product = mig_product_for(smallest.product, smallest_gpu)
        profiles = tuple(p.name for p in product.profiles) if product else ()
        standard = [p for p in profiles if profile_memory_gb(p) >= need]
        advice = (
            f"a MIG {standard[0]} slice would do (enable MIG on these GPUs), or share via time-slicing"
            if standard
            else "share the GPU (time-slicing or MPS) instead of taking all of it"
        )
    what = source.split(": ", 1)[-1] if source != "declared" else f"{need:.0f} GB declared"
    return [
        Finding(
            "whole-gpu-small-model",
            "info",
            f"{what} uses ≤ {need / smallest_gpu:.0%} of a whole {smallest_gpu:.0f} GB GPU",
            advice,
        )
    ]


def parallelism_mismatch(w: Workload, view: ClusterView) -> list[Finding]:
    """TP × PP × DP must be the GPUs requested: more and the server cannot start, fewer and GPUs idle."""
    model, k = w.model, w.request.gpus
    wants = model.parallel if model is not None else None
    if model is None or wants is None or not k or wants == k:
        return []
    parts = f"TP {model.tensor_parallel} × PP {model.pipeline_parallel}"
    parts += f" × DP {model.data_parallel}" if model.data_parallel > 1 else ""
    flag, resource = _tp_flag(model), w.request.resource
    advice = (
        f"request {wants} {resource}, or lower {flag} to fit {k}"
        if wants > k
        else f"request {wants} {resource} (the others would sit idle), or raise {flag}"
    )
    return [
        Finding(
            "parallelism-mismatch",
            "error",
            f"{model.short_name()} runs {parts} = {wants} GPUs but asks for {k} {resource}",
            advice,
        )
    ]


def tp_on_shared_gpu(w: Workload, view: ClusterView) -> list[Finding]:
    """Tensor or pipeline ranks need GPUs that talk: replicas of one GPU and MIG slices cannot."""
    model, k = w.model, w.request.gpus
    split = model.split(k) if model is not None else 1
    if model is None or split < 2:
        return []
    ranks = f"{split}-way tensor/pipeline parallelism"
    if w.request.mig and not k:
        return [Finding("tp-on-shared-gpu", "error", f"{ranks} over MIG slices: they cannot talk", _WHOLE)]
    candidates = [n for n in _gpu_nodes(view.eligible(w)) if n.gpu_total >= k]
    shared = [n for n in candidates if n.sharing != "whole GPU"]
    if not shared:
        return []
    names = ", ".join(n.name for n in shared[:3]) + (" …" if len(shared) > 3 else "")
    every = len(shared) == len(candidates)
    return [
        Finding(
            "tp-on-shared-gpu",
            "error" if every else "warning",
            f"{ranks} over {shared[0].sharing}s ({names}): ranks need whole GPUs"
            + ("" if every else "; other nodes have them"),
            _WHOLE,
        )
    ]


_WHOLE = "run it on whole GPUs (no gpu.replicas, no MIG), or drop tensor/pipeline parallelism"
