"""Admission advice: one small pure function per rule, (workload, cluster view) → findings.

A finding has a stable code, a severity (info, warning, error), a message of at most 120 characters
that names the numbers, and advice: what to request instead. Only ``error`` findings can deny, and only
where the namespace asks for enforcement.

Memory: ``gpu-advisor.io/gpu-memory`` (per GPU) when the pod declares it; otherwise what its model server
will need (see ``webhook.model_size``), and the message says it was inferred.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from extender.cluster.state import NodeState
from extender.model.pods import PodRequest
from extender.placement import nvlink_clique
from webhook.model_size import mig_profiles_for, profile_memory_gb
from webhook.workload import GB_PER_MIB, ClusterView, Finding, Workload, workload_from

__all__ = [
    "RULES",
    "ClusterView",
    "Finding",
    "Workload",
    "advise_with_rules",
    "evaluate_rules",
    "workload_from",
]


def _gb(mib: int | None) -> float:
    return (mib or 0) * GB_PER_MIB


def _gpu_nodes(nodes: Iterable[NodeState]) -> list[NodeState]:
    return [n for n in nodes if n.gpu_total > 0]


# -- the rules --------------------------------------------------------------------------------------


def exceeds_largest_node(w: Workload, view: ClusterView) -> list[Finding]:
    out: list[Finding] = []
    eligible = view.eligible(w)
    k = w.request.gpus
    if k:
        gpu_nodes = _gpu_nodes(eligible)
        largest = max((n.gpu_total for n in gpu_nodes), default=0)
        if k > largest:
            where = (
                f"the largest of the {len(eligible)} nodes it may use has {largest}"
                if gpu_nodes
                else ("no node it may use (selectors, affinity, taints) has nvidia.com/gpu")
            )
            advice = (
                f"request at most {largest} nvidia.com/gpu per pod, or widen its nodeSelector/affinity"
                if largest
                else "check nodeSelector, affinity and tolerations against the GPU nodes"
            )
            out.append(Finding("exceeds-largest-node", "error", f"asks for {k} GPUs; {where}", advice))
    for profile, n in w.request.mig:
        offering = [node for node in view.nodes if node.mig_total(profile)]
        if not offering:
            continue  # mig-profile-unavailable speaks for this one
        largest = max((node.mig_total(profile) for node in eligible), default=0)
        if n > largest:
            out.append(
                Finding(
                    "exceeds-largest-node",
                    "error",
                    f"asks for {n}× MIG {profile}; the nodes it may use offer at most {largest}",
                    f"request at most {largest} nvidia.com/mig-{profile}, or widen its node selection",
                )
            )
    return out


def mig_profile_unavailable(w: Workload, view: ClusterView) -> list[Finding]:
    out = []
    offered = sorted({p for n in view.nodes for p in n.mig_profiles()}, key=profile_memory_gb)
    for profile, _ in w.request.mig:
        if any(n.mig_total(profile) for n in view.nodes):
            continue
        bigger = [p for p in offered if profile_memory_gb(p) >= profile_memory_gb(profile)]
        advice = (
            f"request nvidia.com/mig-{bigger[0]} (the smallest offered slice with as much memory)"
            if bigger
            else "request whole GPUs (nvidia.com/gpu); no node has MIG slices that large"
        )
        listed = ", ".join(offered) or "none"
        out.append(
            Finding(
                "mig-profile-unavailable",
                "error",
                f"no node offers nvidia.com/mig-{profile} (offered: {listed})",
                advice,
            )
        )
    return out


def no_nvlink_set(w: Workload, view: ClusterView) -> list[Finding]:
    k = w.request.gpus
    candidates = [n for n in _gpu_nodes(view.eligible(w)) if n.gpu_total >= k and not n.time_sliced]
    known = [n for n in candidates if n.topology is not None]
    if k < 2 or not known or len(known) < len(candidates):
        return []  # nothing to say where topology is unknown
    best = 1
    for node in known:
        assert node.topology is not None
        if nvlink_clique(node.topology, k) is not None:
            return []
        # The largest set of GPUs joined pairwise by NVLink (an island may be larger but not all-to-all).
        best = max(best, next((m for m in range(k - 1, 1, -1) if nvlink_clique(node.topology, m)), 1))
    best_text = f"at most {best} are" if best > 1 else "PCIe only"
    advice = (
        f"expect PCIe-speed gradient sync, or split the job into {best}-GPU pods"
        if best > 1
        else "expect PCIe-speed gradient sync; target NVLink nodes with a nodeSelector"
    )
    return [
        Finding(
            "no-nvlink-set",
            "warning",
            f"asks for {k} GPUs; no node it may use has {k} joined by NVLink ({best_text})",
            advice,
        )
    ]


def timeslice_multi_gpu(w: Workload, view: ClusterView) -> list[Finding]:
    k = w.request.gpus
    shared = [n for n in _gpu_nodes(view.eligible(w)) if n.time_sliced and n.gpu_total >= k]
    if k < 2 or not shared:
        return []
    names = ", ".join(n.name for n in shared[:3]) + (" …" if len(shared) > 3 else "")
    return [
        Finding(
            "timeslice-multi-gpu",
            "warning",
            f"asks for {k} time-sliced GPUs ({names}): the replicas may all be one physical GPU",
            "use whole GPUs (a node without gpu.replicas) for multi-GPU work, or ask for 1 GPU",
        )
    ]


def timeslice_latency_sensitive(w: Workload, view: ClusterView) -> list[Finding]:
    gpu_nodes = _gpu_nodes(view.eligible(w))
    if not w.request.gpus or not w.latency_sensitive or not gpu_nodes or not all(n.time_sliced for n in gpu_nodes):
        return []
    return [
        Finding(
            "timeslice-latency-sensitive",
            "warning",
            f"latency-sensitive, but all {len(gpu_nodes)} GPU nodes it may use are time-sliced",
            "time-slicing adds queueing delay; target whole-GPU or MIG nodes with a nodeSelector",
        )
    ]


def timeslice_memory(w: Workload, view: ClusterView) -> list[Finding]:
    out: list[Finding] = []
    shared = [n for n in _gpu_nodes(view.eligible(w)) if n.time_sliced and n.gpu_memory_mib]
    if not w.request.gpus or not shared:
        return out
    model = w.model
    replicas = max(n.replicas for n in shared)
    if model is not None and model.framework == "vllm":
        limit = 0.9 / replicas
        if model.gpu_memory_utilization is None or model.gpu_memory_utilization > 1 / replicas:
            given = "unset (0.9)" if model.gpu_memory_utilization is None else f"{model.gpu_memory_utilization:g}"
            out.append(
                Finding(
                    "timeslice-memory",
                    "warning",
                    f"vLLM on a GPU shared {replicas} ways with --gpu-memory-utilization {given}",
                    f"pass --gpu-memory-utilization {math.floor(limit * 100) / 100:g} (≤ 1/{replicas})",
                )
            )
    memory = w.memory_total_gb()
    if memory is None:
        return out
    need, source = memory
    for node in shared:
        physical = node.gpu_total // node.replicas or 1
        capacity = physical * _gb(node.gpu_memory_mib)
        neighbours = node.declared_memory_mib() * GB_PER_MIB
        if neighbours + need > capacity:
            out.append(
                Finding(
                    "timeslice-memory",
                    "warning",
                    f"{node.name}: {need:.0f} GB ({source.split(':')[0]}) + {neighbours:.0f} GB declared"
                    f" by neighbours > {capacity:.0f} GB",
                    "shared GPUs have no memory isolation: one "
                    "OOM hits every tenant; declare less memory or use MIG/whole GPUs",
                )
            )
            break
    return out


def model_does_not_fit(w: Workload, view: ClusterView) -> list[Finding]:
    model = w.model
    nodes = [n for n in _gpu_nodes(view.eligible(w)) if n.gpu_memory_mib]
    if model is None or not w.request.gpus or not nodes:
        return []
    largest = max(_gb(n.gpu_memory_mib) for n in nodes)
    per_gpu = model.need_per_gpu_gb
    if per_gpu <= largest:
        return []
    gpus_needed = math.ceil(model.need_gb / largest)
    shards = 1 << (gpus_needed - 1).bit_length()  # tensor parallelism wants a power of two
    tp = model.tensor_parallel
    where = f"one {largest:.0f} GB GPU" if tp == 1 else f"{tp} × {largest:.0f} GB GPUs"
    return [
        Finding(
            "model-does-not-fit",
            "warning",
            f"{model.describe()} (+20% ≈ {model.need_gb:.0f} GB) does not fit {where}",
            f"use {shards} GPUs with --tensor-parallel-size {shards}, or a quantized (AWQ/FP8) model",
        )
    ]


def whole_gpu_small_model(w: Workload, view: ClusterView) -> list[Finding]:
    if w.request.gpus != 1 or w.request.mig:
        return []
    memory = w.memory_per_gpu_gb()
    nodes = [n for n in _gpu_nodes(view.eligible(w)) if n.gpu_memory_mib and not n.time_sliced]
    if memory is None or not nodes:
        return []
    need, source = memory
    smallest_gpu = min(_gb(n.gpu_memory_mib) for n in nodes)
    if need > 0.4 * smallest_gpu:
        return []
    offered = sorted({p for n in view.nodes for p in n.mig_profiles()}, key=profile_memory_gb)
    fits = [p for p in offered if profile_memory_gb(p) >= need]
    if fits:
        advice = f"request nvidia.com/mig-{fits[0]} instead of a whole GPU"
    else:
        standard = [p for p in mig_profiles_for(smallest_gpu) if profile_memory_gb(p) >= need]
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


RULES: tuple[Callable[[Workload, ClusterView], list[Finding]], ...] = (
    exceeds_largest_node,
    mig_profile_unavailable,
    no_nvlink_set,
    timeslice_multi_gpu,
    timeslice_latency_sensitive,
    timeslice_memory,
    model_does_not_fit,
    whole_gpu_small_model,
)


def evaluate_rules(workload: Workload, view: ClusterView) -> list[Finding]:
    """Every rule's findings, errors first."""
    findings = [f for rule in RULES for f in rule(workload, view)]
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted(findings, key=lambda f: order[f.severity])


def advise_with_rules(
    kind: str, name: str, namespace: str, template: Mapping[str, Any], request: PodRequest, nodes: Iterable[NodeState]
) -> list[dict[str, str]]:
    """The rules' findings as plain dicts, for the dry-run."""
    return [
        f.to_dict()
        for f in evaluate_rules(workload_from(kind, name, namespace, template, request), ClusterView(tuple(nodes)))
    ]
