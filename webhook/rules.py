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
from dataclasses import dataclass, field
from typing import Any, Literal

from extender.cluster.selectors import eligible_nodes
from extender.cluster.shares import request_milli
from extender.cluster.state import NodeState
from extender.model.pods import PodRequest
from extender.placement import nvlink_clique
from webhook.model_size import ModelGuess, guess_model, mig_profiles_for, profile_memory_gb

__all__ = ["RULES", "ClusterView", "Finding", "Workload", "advise_with_rules", "evaluate_rules"]

Severity = Literal["info", "warning", "error"]
MAX_MESSAGE = 120
HIGH_PRIORITY_CLASSES = frozenset({"high-priority", "system-cluster-critical", "system-node-critical"})
# GPU and declared memory are counted in GiB and written "GB", as GPU products are named ("80GB" H100 =
# 81,559 MiB); model weights are quoted in 10^9 bytes. The 7 % between them is well inside the headroom.
_GB_PER_MIB = 1 / 1024


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    message: str
    advice: str

    def __post_init__(self) -> None:
        if len(self.message) > MAX_MESSAGE:
            object.__setattr__(self, "message", self.message[: MAX_MESSAGE - 1] + "…")

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "severity": self.severity, "message": self.message, "advice": self.advice}


@dataclass(frozen=True)
class Workload:
    """A pod, or the pod template of a controller, as the rules see it."""

    kind: str
    name: str
    namespace: str
    template: Mapping[str, Any]  # {"metadata": …, "spec": …} of the pods it makes
    request: PodRequest
    model: ModelGuess | None = field(default=None)

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.template.get("spec") or {}

    @property
    def latency_sensitive(self) -> bool:
        if self.request.latency_sensitive:
            return True
        spec = self.spec
        return spec.get("priorityClassName") in HIGH_PRIORITY_CLASSES or int(spec.get("priority") or 0) >= 1_000_000

    def memory_total_gb(self) -> tuple[float, str] | None:
        """(GB over all its GPUs, where it comes from): declared × GPUs, or the model server's whole need."""
        if self.request.gpu_memory_mib:
            return self.request.gpu_memory_mib * _GB_PER_MIB * max(1, self.request.gpus), "declared"
        if self.model is not None:
            return self.model.need_gb, f"inferred: {self.model.describe()}"
        return None

    def memory_per_gpu_gb(self) -> tuple[float, str] | None:
        """(GB per GPU, where it comes from), declared first, else inferred from the model."""
        if self.request.gpu_memory_mib:
            return self.request.gpu_memory_mib * _GB_PER_MIB, "declared"
        if self.model is not None:
            return self.model.need_per_gpu_gb, f"inferred: {self.model.describe()}"
        return None


@dataclass(frozen=True)
class ClusterView:
    nodes: tuple[NodeState, ...]

    def eligible(self, workload: Workload) -> list[NodeState]:
        return eligible_nodes(self.nodes, workload.spec)


def _gb(mib: int | None) -> float:
    return (mib or 0) * _GB_PER_MIB


def _gpu_nodes(nodes: Iterable[NodeState]) -> list[NodeState]:
    return [n for n in nodes if n.gpu_total > 0]


# -- the rules --------------------------------------------------------------------------------------


def exceeds_largest_node(w: Workload, view: ClusterView) -> list[Finding]:
    out: list[Finding] = []
    eligible = view.eligible(w)
    k = w.request.gpus
    if k and w.request.share is None:  # shares: gpu_share_never_fits
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
        neighbours = node.declared_memory_mib() * _GB_PER_MIB
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


def _field_name(source: str) -> str:
    """``metadata.annotations["alibabacloud.com/gpu-milli"]`` → ``alibabacloud.com/gpu-milli``."""
    return source.rsplit("[", 1)[-1].strip('[]"')


def gpu_share_never_fits(w: Workload, view: ClusterView) -> list[Finding]:
    """A shared request no GPU model of the cluster can ever hold (model not allowed, share too big, too few GPUs)."""
    share, k = w.request.share, w.request.gpus
    if share is None:
        return []
    offered: dict[str, bool] = {}
    for n in view.eligible(w):
        gpus = n.shares
        if gpus is None or gpus.problem or gpus.convention != share.convention:
            continue
        memory = gpus.memory_mib[0] if gpus.memory_mib else None
        fits = share.allows(n.gpu_model or "") and request_milli(share, memory) <= 1000 and len(gpus.free) >= k
        name = f"{n.gpu_model or 'unknown'}" + (f" {_gb(memory):.0f} GB" if memory else "")
        offered[name] = offered.get(name, False) or fits
    if any(offered.values()):
        return []
    where = ", ".join(sorted(offered)) if offered else "no node it may use offers GPU sharing"
    return [
        Finding(
            "gpu-share-never-fits",
            "warning",
            f"{w.request.describe()} ({_field_name(share.source)}) fits no GPU here: {where}",
            "ask a share and GPU model the cluster has (or check nodeSelector and tolerations)",
        )
    ]


RULES: tuple[Callable[[Workload, ClusterView], list[Finding]], ...] = (
    exceeds_largest_node,
    gpu_share_never_fits,
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


def workload_from(kind: str, name: str, namespace: str, template: Mapping[str, Any], request: PodRequest) -> Workload:
    spec = template.get("spec") or {}
    containers = list(spec.get("containers") or [])
    return Workload(kind, name, namespace, template, request, guess_model(containers))


def advise_with_rules(
    kind: str, name: str, namespace: str, template: Mapping[str, Any], request: PodRequest, nodes: Iterable[NodeState]
) -> list[dict[str, str]]:
    """The rules' findings as plain dicts, for the dry-run."""
    return [
        f.to_dict()
        for f in evaluate_rules(workload_from(kind, name, namespace, template, request), ClusterView(tuple(nodes)))
    ]
