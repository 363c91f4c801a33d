"""Gathering, part one: what a node would do with a request, before live telemetry is looked at.

A :class:`Plan` is the filter verdict and the telemetry-free components for a (node state, request,
policy); it is remembered on the node state. For whole GPUs it asks placement once
(:meth:`Placer.assess`) for the set, its score, what it leaves and, when NVLink is required, the cliques.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from extender.cluster.state import NodeState
from extender.model.amd_partitions import partition_fit, partitions_used
from extender.model.pods import PodRequest
from extender.placement import FRAGMENTATION_SIZES, Assessment, PlacementImpossible, Placer
from extender.scoring import formula, model_fit
from extender.scoring.formula import NEUTRAL
from extender.scoring.policy import ScoringPolicy

__all__ = ["Plan", "as_planned", "gib", "memory_matters", "plan"]

_GIB = 1024.0


# Not frozen (a frozen dataclass sets each field through object.__setattr__: a first call at 5,000
# candidates makes hundreds), but treated as immutable all the same: families of nodes share them.
@dataclass(slots=True)
class Plan:
    """Everything about a (node version, request) that does not depend on live telemetry."""

    fits: bool
    reason: str
    unresolvable: bool = False
    gpus: tuple[int, ...] | None = None
    components: dict[str, float] = field(default_factory=dict)
    telemetry_gpus: tuple[int, ...] = ()  # GPUs whose live state matters for headroom
    level: int | None = None  # what the placement strands (``stranding``); None: not informed
    # Requiring NVLink would not change it: the set it hands out is NVLink-joined, or it refuses on
    # counts before any set is looked at (``alike`` then hands the NVLink pod this very plan).
    link_blind: bool = False
    # What verdicts of this plan made of a headroom (``node_verdict.verdict_of``): alike nodes share
    # the plan, and with it one reason, breakdown and rank per headroom, not one per node. Not copied
    # by ``replace`` (a plan with other content starts afresh), not compared.
    looks: dict[tuple[float, str, bool], tuple[str, Mapping[str, float], int, tuple[float, float]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )


def gib(mib: float) -> str:
    return f"{mib / _GIB:.0f} GiB" if mib >= _GIB else f"{mib:.0f} MiB"


def plan(
    node: NodeState, request: PodRequest, policy: ScoringPolicy, placer: Placer, avoid: frozenset[int] = frozenset()
) -> Plan:
    """``avoid``: free GPUs the set may not include (their VRAM is held: ``held``), on a node with a
    known wiring; they still count as free for packing, as the kubelet counts them."""
    if request.other and (partitioned := _plan_partitions(node, request, policy)) is not None:
        return partitioned
    if request.mig and not request.gpus:
        refused = model_fit.mig_refusal(request)
        return Plan(False, refused.reason, unresolvable=True) if refused else _plan_mig(node, request, policy)
    counted = _refusal(node, request)
    if counted is not None:
        return replace(counted, link_blind=True)  # before any set is looked at
    return _model_fit(node, request, _plan_whole(node, request, policy, placer, avoid))


def _plan_partitions(node: NodeState, request: PodRequest, policy: ScoringPolicy) -> Plan | None:
    """AMD partitions (``amd.com/cpx_nps4``): counted like MIG slices, on a node in that mode only."""
    fit = partition_fit(request.other, node.allocatable, partitions_used(p.request.other for p in node.pods))
    if fit is not None and node.allocatable and node.gpu_vendor.resource != request.resource:
        return Plan(False, f"offers {node.gpu_vendor.resource}, pod asks for {request.resource}", unresolvable=True)
    if fit is None or not fit.fits:
        return None if fit is None else Plan(False, fit.reason, unresolvable=fit.unresolvable)
    return Plan(True, fit.reason, components=_neutral(formula.packing(policy.mode, fit.used_after, fit.total)))


# -- what the pod's model needs (``model_fit``): refusals before placement, the penalty after ---------


def _model_refusal(node: NodeState, request: PodRequest) -> Plan | None:
    refused = model_fit.memory_refusal(node, request) or model_fit.shared_refusal(node, request)
    return Plan(False, refused.reason, unresolvable=refused.unresolvable) if refused else None


def _model_fit(node: NodeState, request: PodRequest, found: Plan) -> Plan:
    """A plan whose node holds the weights but not the KV cache they want: components × room."""
    tight = model_fit.tight_fit(node, request) if found.fits else None
    if tight is None:
        return found
    components = {name: value * tight.room for name, value in found.components.items()}
    return replace(found, reason=f"{tight.note}; {found.reason}", components=components)


# -----------------------------------------------------------------------------------------------------


def memory_matters(node: NodeState, request: PodRequest) -> bool:
    """Does the pod's declared VRAM or named model change this node's plan? On whole GPUs only as a
    refusal (more than a GPU has) or, for a model, as a tight fit (its KV cache short of room); on
    shared GPUs always (declared VRAM adds up). Otherwise the plan is that of the same pod without
    them, which lets such pods share plans and verdicts (``alike``). Keep this in step with every
    place below that reads ``gpu_memory_mib`` or ``model``, and reading nothing of the node but its
    ``sharing``, ``time_sliced`` and ``slot_memory_mib`` (``alike`` keeps the answer by those)."""
    if not request.gpu_memory_mib and request.model is None:
        return False
    if node.sharing != "whole GPU" or node.time_sliced:
        return True
    if request.model is not None and model_fit.tight_fit(node, request) is not None:
        return True
    return model_fit.memory_refusal(node, request) is not None


def as_planned(request: PodRequest) -> PodRequest | None:
    """The request as a plan and its verdict read it, when that is less than all of it; None when they
    read it all (a GPU share, or no GPU: stranding weighs the pod's CPU against the learned mix).

    A whole-GPU, MIG or partition request's plan reads neither what the pod asks of the node's CPU
    and memory (kube-scheduler's NodeResourcesFit judges those), nor the pod group it belongs to (the
    clique term reads that after the memo), nor whether it is latency-sensitive (the admission
    advisor's business), nor the learned mix (``plan`` is not given it), nor an NVLink requirement
    of a one-GPU pod: pods that differ only in
    those share one shape, so a Deployment with new CPU figures, or the next pod group of a JobSet,
    finds its verdicts already worked out. Keep in step with what ``plan`` reads."""
    if request.share is not None or not request.wants_gpu:
        return None
    # NVLink between the GPUs of a one-GPU pod is no requirement at all.
    lone_link = request.interconnect is not None and request.gpus <= 1
    grouped = request.group is not None
    if not (request.cpu_milli or request.memory_mib or grouped or request.latency_sensitive or lone_link):
        return request
    interconnect = None if lone_link else request.interconnect
    return replace(request, cpu_milli=0, memory_mib=0, group=None, latency_sensitive=False, interconnect=interconnect)


def _neutral(packing: float) -> dict[str, float]:
    """Components for a node whose wiring cannot be judged: only packing says anything."""
    return {"set": NEUTRAL, "fragmentation": NEUTRAL, "numa": NEUTRAL, "packing": packing}


def _plan_mig(node: NodeState, request: PodRequest, policy: ScoringPolicy) -> Plan:
    for profile, n in request.mig:
        total, free = node.mig_total(profile), node.mig_free(profile)
        if total == 0:
            offered = ", ".join(node.mig_profiles()) or "none"
            return Plan(False, f"offers no MIG {profile} (MIG profiles here: {offered})", unresolvable=True)
        if total < n:
            return Plan(False, f"has {total}× MIG {profile} in all, pod needs {n}", unresolvable=True)
        if free < n:
            return Plan(False, f"{free} of {total}× MIG {profile} free, pod needs {n}")
    profile, n = request.mig[0]
    total = node.mig_total(profile)
    used_after = total - node.mig_free(profile) + n
    return Plan(
        True,
        f"MIG {profile}: {node.mig_free(profile)} of {total} free",
        components=_neutral(formula.packing(policy.mode, used_after, total)),
    )


def _refusal(node: NodeState, request: PodRequest) -> Plan | None:
    """A refusal on counts and memory alone, before any GPU is looked at; None when there is none."""
    k, total = request.gpus, node.gpu_total
    offered = node.gpu_vendor.resource
    if total and offered != request.resource:  # an AMD GPU is no use to a CUDA pod, nor the other way round
        return Plan(False, f"offers {offered}, pod asks for {request.resource}", unresolvable=True)
    if total == 0:
        return Plan(False, f"has no {request.resource}", unresolvable=True)
    if total < k:
        return Plan(False, f"has {total} GPUs in all, pod needs {k}", unresolvable=True)
    if (refused := _model_refusal(node, request)) is not None:
        return refused
    if node.gpu_free_count < k:
        return Plan(False, f"{node.gpu_free_count} of {total} GPUs free, pod needs {k}")
    return None


def _plan_whole(
    node: NodeState, request: PodRequest, policy: ScoringPolicy, placer: Placer, avoid: frozenset[int]
) -> Plan:
    if node.sharing != "whole GPU":  # replicas or MIG slices: counts alone
        return _plan_time_sliced(node, request, policy)
    if node.topology is None or node.free_gpus is None:
        why = node.topology_problem or "topology unknown"
        if request.interconnect == "nvlink" and request.gpus > 1:
            return Plan(False, f"{why}: cannot confirm NVLink between {request.gpus} GPUs")
        return Plan(
            True,
            f"{why}: scored on counts alone ({node.gpu_free_count} of {node.gpu_total} free)",
            components=_neutral(formula.packing(policy.mode, node.gpu_used + request.gpus, node.gpu_total)),
        )
    return _plan_placed(node, request, policy, placer, avoid)


def _plan_time_sliced(node: NodeState, request: PodRequest, policy: ScoringPolicy) -> Plan:
    k, total, topo = request.gpus, node.gpu_total, node.topology
    physical = node.physical_gpus
    memory, want = node.gpu_memory_mib, request.gpu_memory_mib
    if want and memory:
        declared = node.declared_memory_mib()
        if declared + want * k > physical * memory:
            return Plan(
                False,
                f"time-sliced: declared VRAM {gib(declared)} + {gib(want * k)} exceeds {gib(physical * memory)}"
                f" on {physical} shared GPUs",
            )
    shared = f"time-sliced ×{node.replicas}" if node.time_sliced else f"{node.sharing}s"
    return Plan(
        True,
        f"{shared}: {node.gpu_free_count} of {total} {'replicas' if node.replicas > 1 else 'slices'} free",
        components=_neutral(formula.packing(policy.mode, node.gpu_used + k, total)),
        telemetry_gpus=topo.indices if topo else (),
    )


def _plan_placed(
    node: NodeState, request: PodRequest, policy: ScoringPolicy, placer: Placer, avoid: frozenset[int]
) -> Plan:
    """A node with a known wiring and free set: judged by the set it would really hand out."""
    topo, free, k = node.topology, node.free_gpus, request.gpus
    assert topo is not None and free is not None
    if avoid:
        free = tuple(g for g in free if g not in avoid)
    if len(free) < k:
        return Plan(
            False, f"{len(free)} of {node.gpu_total} GPUs free by its last report, pod needs {k}", link_blind=True
        )
    wants_nvlink = request.interconnect == "nvlink" and k > 1
    try:
        found = placer.assess(topo, k, free, policy.placement, cliques=wants_nvlink)
    except PlacementImpossible as exc:
        return Plan(False, str(exc))
    if wants_nvlink and found.node_clique is None:
        islands = topo.nvlink_islands()
        wiring = "PCIe only, no NVLink" if len(islands[0]) == 1 else f"largest NVLink island {len(islands[0])}"
        return Plan(False, f"{node.name}: {wiring}; pod requires NVLink between {k} GPUs", unresolvable=True)
    if found.placement is None:
        return Plan(False, found.problem or "no placement")
    if wants_nvlink and not found.all_nvlink:
        spare = found.free_clique
        detail = (
            f"free NVLink set {'-'.join(map(str, spare))} is not what the device plugin hands out"
            if spare
            else (f"no {k} free GPUs joined by NVLink (free: {','.join(map(str, free))})")
        )
        return Plan(False, f"pod requires NVLink: {detail}")
    return _placed(node, found, policy)


def _placed(node: NodeState, found: Assessment, policy: ScoringPolicy) -> Plan:
    """The plan of a placement that fits: its components and the one-line reason."""
    topo, placement = node.topology, found.placed()
    assert topo is not None and node.free_gpus is not None
    k, before, left = found.k, found.before, placement.leaves
    best = found.best_possible or 0
    kept = [left.quality[s] / before.quality[s] for s in FRAGMENTATION_SIZES if before.quality[s] > 0]
    used_after = node.gpu_total - len(node.free_gpus) + k
    components = {
        "set": formula.set_value(k, placement.score, best, found.nvlink_share),
        "fragmentation": formula.fragmentation(kept, bool(left.free)),
        "numa": formula.numa({topo.gpu(g).numa_node for g in placement.gpus}),
        "packing": formula.packing(policy.mode, used_after, node.gpu_total),
    }
    frag_note = ", ".join(
        f"{s}-GPU set {left.quality[s]:.0%}" for s in FRAGMENTATION_SIZES if before.quality[s] > 0 and left.free
    )
    quality = f" (score {placement.score} = {placement.score / best:.0%} of this node's best)" if k > 1 and best else ""
    label = _set_label(placement.gpus, found.all_nvlink, topo.vendor.link)
    reason = f"{label}{quality}; leaves {','.join(map(str, left.free)) or 'nothing'}"
    if frag_note:
        reason += f" ({frag_note})"
    return Plan(
        True,
        reason,
        gpus=placement.gpus,
        components=components,
        telemetry_gpus=placement.gpus,
        link_blind=found.all_nvlink,
    )


def _set_label(gpus: tuple[int, ...], nvlink: bool, link: str = "NVLink") -> str:
    names = {1: "GPU", 2: "pair", 3: "trio", 4: "quad", 8: "octet"}
    kind = names.get(len(gpus), f"{len(gpus)}-set")
    return f"{link + ' ' if nvlink and len(gpus) > 1 else ''}{kind} {'-'.join(map(str, gpus))}"
