"""Admission advice: one small pure function per rule, (workload, cluster view) → findings.

A finding has a stable code, a severity (info, warning, error), a message of at most 120 characters
that names the numbers, and advice: what to request instead. Only ``error`` findings can deny, and only
where the namespace asks for enforcement.

Memory: ``gpu-advisor.io/gpu-memory`` (per GPU) when the pod declares it; otherwise what its model server
will need (see ``extender.model.needs``), and the message says it was inferred. GPU counts are physical
GPUs; a node whose ``nvidia.com/gpu`` are time-sliced or MPS replicas, or MIG slices, is named as such.

The rules live by topic: here the counts and wiring, ``model_rules`` the model, ``sharing_rules``
time-slicing, MPS and MIG, ``share_rule`` fractional shares.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from extender.cluster.state import NodeState
from extender.model.mig_profiles import profile_memory_gb
from extender.model.pods import PodRequest, PodSpecError
from extender.placement import nvlink_clique
from webhook.amd_rules import amd_partition_unavailable
from webhook.clique_rule import multi_node_without_group
from webhook.model_rules import model_does_not_fit, parallelism_mismatch, tp_on_shared_gpu, whole_gpu_small_model
from webhook.share_rule import gpu_share_never_fits
from webhook.sharing_rules import (
    mig_multi_slice,
    mps_memory,
    timeslice_latency_sensitive,
    timeslice_memory,
    timeslice_multi_gpu,
)
from webhook.workload import ClusterView, Finding, Workload, invalid_request, workload_from

__all__ = [
    "RULES",
    "ClusterView",
    "Finding",
    "Workload",
    "advise_with_rules",
    "evaluate_rules",
    "invalid_request",
    "workload_from",
]


def _gpu_nodes(nodes: Iterable[NodeState]) -> list[NodeState]:
    return [n for n in nodes if n.gpu_total > 0]


# -- the rules --------------------------------------------------------------------------------------


def _counted(node: NodeState) -> str:
    """``t4-ts-a: 16 time-sliced replicas of 4``: what a node's count really is."""
    return f"{node.name}: {node.gpu_total} {node.sharing}s of {node.physical_gpus}"


def exceeds_largest_node(w: Workload, view: ClusterView) -> list[Finding]:
    """More GPUs than any node it may use has; counted in physical GPUs, naming replicas and slices."""
    out: list[Finding] = []
    eligible = view.eligible(w)
    k = w.request.gpus
    if k and w.request.share is None:  # shares: webhook.share_rule
        gpu_nodes = _gpu_nodes(eligible)
        slots = max((n.gpu_total for n in gpu_nodes), default=0)
        largest = max((n.physical_gpus for n in gpu_nodes), default=0)
        inflated = [n for n in gpu_nodes if n.gpu_total >= k and n.gpu_total > largest]
        if k > slots or (k > largest and inflated):
            shared = max((n for n in gpu_nodes if n.gpu_total > largest), key=lambda n: n.gpu_total, default=None)
            if shared is not None:
                where = f"nodes it may use have at most {largest} ({_counted(shared)})"
            elif gpu_nodes:
                where = f"the largest of the {len(eligible)} nodes it may use has {largest}"
            else:
                where = f"no node it may use (selectors, affinity, taints) has {w.request.resource}"
            advice = (
                f"request at most {largest} {w.request.resource} per pod, or widen its nodeSelector/affinity"
                if largest
                else "check nodeSelector, affinity and tolerations against the GPU nodes"
            )
            severity: Literal["error", "warning"] = "error" if k > slots else "warning"
            out.append(Finding("exceeds-largest-node", severity, f"asks for {k} GPUs; {where}", advice))
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
    candidates = [n for n in _gpu_nodes(view.eligible(w)) if n.gpu_total >= k and n.sharing == "whole GPU"]
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


RULES: tuple[Callable[[Workload, ClusterView], list[Finding]], ...] = (
    exceeds_largest_node,
    gpu_share_never_fits,
    mig_profile_unavailable,
    amd_partition_unavailable,
    no_nvlink_set,
    multi_node_without_group,
    parallelism_mismatch,
    tp_on_shared_gpu,
    mig_multi_slice,
    timeslice_multi_gpu,
    timeslice_latency_sensitive,
    timeslice_memory,
    mps_memory,
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
    try:
        workload = workload_from(kind, name, namespace, template, request)
    except PodSpecError as exc:
        return [invalid_request(str(exc)).to_dict()]
    return [f.to_dict() for f in evaluate_rules(workload, ClusterView(tuple(nodes)))]
