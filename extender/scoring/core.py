"""Filter verdicts and 0–10 node scores for one pod, each with a breakdown and a one-line reason.

A node is judged by the GPU set it would really hand the pod (``placement``), what that leaves
behind, and how busy those GPUs are now. The score is a weighted mean of components in [0, 1]::

    score = round(10 × Σ weight_c × value_c / Σ weight_c)

    set            ½ × placement score / best score any k GPUs of the empty node reach
                   + ½ × share of the set's GPU pairs joined by NVLink      (k = 1: 1)
    fragmentation  share of the node's 2-, 4- and 8-GPU capability that survives the placement
    headroom       per chosen GPU min(1 − SM%/100, free VRAM share), averaged; unknown or stale: 0.5
    numa           1 if the chosen GPUs share a NUMA node, 0 if not, 0.5 if unknown
    packing        binpack: share of the node's GPUs in use afterwards; spread: share left free

Without a topology the set, fragmentation and NUMA terms are neutral (0.5), "scored on counts alone".

Filter rejections name their reason; ``unresolvable`` marks those no preemption or waiting can cure
(the node can never offer what the pod asks), which kube-scheduler then does not retry by preemption.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import count
from json.encoder import encode_basestring_ascii
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from extender.cluster.state import NodeState, format_time
from extender.model.gpu_use import gpu_use
from extender.model.pods import PodRequest
from extender.model.readings import TelemetryBoard
from extender.placement.core import (
    FRAGMENTATION_SIZES,
    PlacementImpossible,
    all_nvlink,
    best_placement,
    best_set_score,
    leaves_behind,
    nvlink_clique,
)

__all__ = ["PolicyError", "ScoringPolicy", "Verdict", "VerdictMemo", "evaluate", "judge_all"]

log = logging.getLogger(__name__)
_GIB = 1024.0


class PolicyError(ValueError):
    """The scoring policy file is unusable; the message lists every bad field."""


class Weights(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    set: float = Field(0.50, ge=0)
    fragmentation: float = Field(0.20, ge=0)
    headroom: float = Field(0.15, ge=0)
    numa: float = Field(0.05, ge=0)
    packing: float = Field(0.10, ge=0)

    @model_validator(mode="after")
    def _some_weight(self) -> Weights:
        if sum(self.as_dict().values()) <= 0:
            raise ValueError("at least one weight must be above 0")
        return self

    def as_dict(self) -> dict[str, float]:
        return self.model_dump()


class ScoringPolicy(BaseModel):
    """Chosen once at start-up (``--policy FILE``, YAML or JSON); unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    mode: Literal["binpack", "spread"] = "binpack"
    # Which set a node is assumed to hand out: what NVIDIA's device plugin does, or the ideal set.
    placement: Literal["nvidia-best-effort", "ideal"] = "nvidia-best-effort"
    weights: Weights = Field(default_factory=Weights)
    telemetry_max_age_s: float = Field(60.0, gt=0)
    # VRAM in use on a GPU no pod holds, as a share of the GPU, above which it is called occupied.
    orphan_memory_share: float = Field(0.10, gt=0, le=1)


@dataclass(frozen=True)
class Verdict:
    node: str
    fits: bool
    reason: str
    score: int = 0
    unresolvable: bool = False
    gpus: tuple[int, ...] | None = None
    breakdown: dict[str, float] = field(default_factory=dict)
    # JSON-quoted name and reason, made once: replies for thousands of nodes are joined from them.
    node_json: str = field(init=False, repr=False, compare=False)
    reason_json: str = field(init=False, repr=False, compare=False)
    priority_json: str = field(init=False, repr=False, compare=False)  # {"Host": …, "Score": …}

    def __post_init__(self) -> None:
        quoted = encode_basestring_ascii(self.node)
        object.__setattr__(self, "node_json", quoted)
        object.__setattr__(self, "reason_json", encode_basestring_ascii(self.reason))
        object.__setattr__(self, "priority_json", f'{{"Host":{quoted},"Score":{self.score if self.fits else 0}}}')

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "fits": self.fits,
            "unresolvable": self.unresolvable,
            "score": self.score,
            "gpus": None if self.gpus is None else list(self.gpus),
            "reason": self.reason,
            "breakdown": {k: round(v, 4) for k, v in self.breakdown.items()},
        }


@dataclass(frozen=True)
class _Plan:
    """Everything about a (node version, request) that does not depend on live telemetry."""

    fits: bool
    reason: str
    unresolvable: bool = False
    gpus: tuple[int, ...] | None = None
    components: dict[str, float] = field(default_factory=dict)
    telemetry_gpus: tuple[int, ...] = ()  # GPUs whose live state matters for headroom


def _gib(mib: float) -> str:
    return f"{mib / _GIB:.0f} GiB" if mib >= _GIB else f"{mib:.0f} MiB"


def _set_label(topo_gpus: tuple[int, ...], nvlink: bool) -> str:
    names = {1: "GPU", 2: "pair", 3: "trio", 4: "quad", 8: "octet"}
    kind = names.get(len(topo_gpus), f"{len(topo_gpus)}-set")
    return f"{'NVLink ' if nvlink and len(topo_gpus) > 1 else ''}{kind} {'-'.join(map(str, topo_gpus))}"


def _packing(policy: ScoringPolicy, used_after: int, total: int) -> float:
    if total <= 0:
        return 0.5
    share = min(1.0, used_after / total)
    return share if policy.mode == "binpack" else 1.0 - share


def _plan_mig(node: NodeState, request: PodRequest, policy: ScoringPolicy) -> _Plan:
    for profile, n in request.mig:
        total, free = node.mig_total(profile), node.mig_free(profile)
        if total == 0:
            offered = ", ".join(node.mig_profiles()) or "none"
            return _Plan(False, f"offers no MIG {profile} (MIG profiles here: {offered})", unresolvable=True)
        if total < n:
            return _Plan(False, f"has {total}× MIG {profile} in all, pod needs {n}", unresolvable=True)
        if free < n:
            return _Plan(False, f"{free} of {total}× MIG {profile} free, pod needs {n}")
    profile, n = request.mig[0]
    total = node.mig_total(profile)
    used_after = total - node.mig_free(profile) + n
    return _Plan(
        True,
        f"MIG {profile}: {node.mig_free(profile)} of {total} free",
        components={"set": 0.5, "fragmentation": 0.5, "numa": 0.5, "packing": _packing(policy, used_after, total)},
    )


def _plan_whole(node: NodeState, request: PodRequest, policy: ScoringPolicy) -> _Plan:
    k = request.gpus
    total = node.gpu_total
    if total == 0:
        return _Plan(False, "has no nvidia.com/gpu", unresolvable=True)
    if total < k:
        return _Plan(False, f"has {total} GPUs in all, pod needs {k}", unresolvable=True)
    memory = node.gpu_memory_mib
    want = request.gpu_memory_mib
    if want and memory and want > memory:
        return _Plan(False, f"pod declares {_gib(want)} per GPU, its GPUs have {_gib(memory)}", unresolvable=True)
    if node.gpu_free_count < k:
        return _Plan(False, f"{node.gpu_free_count} of {total} GPUs free, pod needs {k}")

    topo = node.topology
    if node.time_sliced:
        physical = len(topo.indices) if topo else max(1, total // node.replicas)
        if want and memory:
            declared = node.declared_memory_mib()
            if declared + want * k > physical * memory:
                return _Plan(
                    False,
                    f"time-sliced: declared VRAM {_gib(declared)} + {_gib(want * k)} exceeds {_gib(physical * memory)}"
                    f" on {physical} shared GPUs",
                )
        used_after = node.gpu_used + k
        return _Plan(
            True,
            f"time-sliced ×{node.replicas}: {node.gpu_free_count} of {total} replicas free",
            components={"set": 0.5, "fragmentation": 0.5, "numa": 0.5, "packing": _packing(policy, used_after, total)},
            telemetry_gpus=topo.indices if topo else (),
        )

    if topo is None or node.free_gpus is None:
        why = node.topology_problem or "topology unknown"
        if request.interconnect == "nvlink" and k > 1:
            return _Plan(False, f"{why}: cannot confirm NVLink between {k} GPUs")
        return _Plan(
            True,
            f"{why}: scored on counts alone ({node.gpu_free_count} of {total} free)",
            components={
                "set": 0.5,
                "fragmentation": 0.5,
                "numa": 0.5,
                "packing": _packing(policy, node.gpu_used + k, total),
            },
        )

    free = node.free_gpus
    if len(free) < k:
        return _Plan(False, f"{len(free)} of {total} GPUs free by its last report, pod needs {k}")
    if request.interconnect == "nvlink" and k > 1 and nvlink_clique(topo, k) is None:
        islands = topo.nvlink_islands()
        wiring = "PCIe only, no NVLink" if len(islands[0]) == 1 else f"largest NVLink island {len(islands[0])}"
        return _Plan(False, f"{node.name}: {wiring}; pod requires NVLink between {k} GPUs", unresolvable=True)
    try:
        placement = best_placement(topo, k, free=free, policy=policy.placement)
    except PlacementImpossible as exc:
        return _Plan(False, str(exc))
    nvlinked = all_nvlink(topo, placement.gpus)
    if request.interconnect == "nvlink" and k > 1 and not nvlinked:
        spare = nvlink_clique(topo, k, free)
        detail = (
            f"free NVLink set {'-'.join(map(str, spare))} is not what the device plugin hands out"
            if spare
            else (f"no {k} free GPUs joined by NVLink (free: {','.join(map(str, free))})")
        )
        return _Plan(False, f"pod requires NVLink: {detail}")

    best = best_set_score(topo, k) or 0
    pairs = [(a, b) for i, a in enumerate(placement.gpus) for b in placement.gpus[i + 1 :]]
    on_nvlink = sum(1 for a, b in pairs if topo.link(a, b).nvlinks) / len(pairs) if pairs else 1.0
    # Relative to this node's best, so a node is judged by the set it hands out, and absolute, so
    # the best set of a PCIe-only node never looks as good as an NVLink set.
    set_value = 1.0 if k == 1 else 0.5 * (placement.score / best if best else 0.0) + 0.5 * on_nvlink
    before = leaves_behind(topo, free)
    kept = [placement.leaves.quality[s] / before.quality[s] for s in FRAGMENTATION_SIZES if before.quality[s] > 0]
    # An exact fit strands nothing: what it uses up is packing's business, not fragmentation's.
    fragmentation = 1.0 if not placement.leaves.free or not kept else sum(kept) / len(kept)
    numas = {topo.gpu(g).numa_node for g in placement.gpus}
    numa = 0.5 if None in numas else (1.0 if len(numas) == 1 else 0.0)
    used_after = total - len(free) + k
    left = placement.leaves
    frag_note = ", ".join(
        f"{s}-GPU set {left.quality[s]:.0%}" for s in FRAGMENTATION_SIZES if before.quality[s] > 0 and left.free
    )
    quality = f" (score {placement.score} = {placement.score / best:.0%} of this node's best)" if k > 1 and best else ""
    reason = f"{_set_label(placement.gpus, nvlinked)}{quality}; leaves {','.join(map(str, left.free)) or 'nothing'}" + (
        f" ({frag_note})" if frag_note else ""
    )
    return _Plan(
        True,
        reason,
        gpus=placement.gpus,
        components={
            "set": set_value,
            "fragmentation": fragmentation,
            "numa": numa,
            "packing": _packing(policy, used_after, total),
        },
        telemetry_gpus=placement.gpus,
    )


_plans: dict[tuple[str, int, int, int], _Plan] = {}


def _plan(node: NodeState, request: PodRequest, policy: ScoringPolicy) -> _Plan:
    key = (node.name, node.version, id(request), id(policy))
    plan = _plans.get(key)
    if plan is None:
        plan = (
            _plan_mig(node, request, policy) if request.mig and not request.gpus else _plan_whole(node, request, policy)
        )
        if len(_plans) > 200_000:
            _plans.clear()
        _plans[key] = plan
    return plan


def _headroom(
    node: NodeState, gpus: tuple[int, ...], telemetry: TelemetryBoard | None, policy: ScoringPolicy, now: float
) -> tuple[float, str, float]:
    """(value in [0, 1], a short note, until when this holds). Unknown or stale readings are neutral."""
    forever = float("inf")
    if telemetry is None or node.topology is None or not gpus:
        return 0.5, "no telemetry", forever
    values: list[float] = []
    notes: list[str] = []
    stale: list[float] = []
    valid_until = forever
    holders = node.holders
    for g in gpus:
        gpu = node.topology.gpu(g)
        reading = telemetry.reading(node.name, gpu)
        if reading is None:
            continue
        if telemetry.is_stale(reading, now):
            stale.append(telemetry.age(reading, now) or 0.0)
            valid_until = min(valid_until, now + 1.0)  # the age in the note moves on
            continue
        if reading.at is not None:
            valid_until = min(valid_until, reading.at + telemetry.max_age_s)
        parts = []
        if reading.sm_util is not None:
            parts.append(1.0 - min(100.0, max(0.0, reading.sm_util)) / 100.0)
        total = reading.memory_total_mib or gpu.memory_mib or node.gpu_memory_mib
        if reading.memory_used_mib is not None and total:
            used_share = min(1.0, reading.memory_used_mib / total)
            parts.append(1.0 - used_share)
            if used_share >= policy.orphan_memory_share and g not in holders and not node.time_sliced:
                notes.append(gpu_use(g, reading, None).text)  # free by allocation, yet in use
        if parts:
            values.append(min(parts))
    if not values:
        if stale:
            return 0.5, f"telemetry stale ({max(stale):.0f} s)", valid_until
        seen = [t for t in (telemetry.last_seen(node.name, node.topology.gpu(g)) for g in gpus) if t is not None]
        if seen:
            return 0.5, f"no telemetry since {format_time(max(seen))}", valid_until
        return 0.5, "no telemetry for these GPUs", valid_until
    value = sum(values) / len(values)
    note = "; ".join(notes) if notes else f"live headroom {value:.0%}"
    if stale:
        note += f"; {len(stale)} GPU readings stale ({max(stale):.0f} s)"
    return value, note, valid_until


_shapes: dict[tuple[int, int, int, float | None], int] = {}
_shape_ids = count(1)
_requests: dict[PodRequest, PodRequest] = {}
_weights: dict[int, tuple[dict[str, float], float]] = {}
_MEMO_PER_NODE = 64


def _canonical(request: PodRequest) -> PodRequest:
    """One object per distinct request, so memo keys can use its identity instead of re-hashing it."""
    found = _requests.get(request)
    if found is None:
        if len(_requests) > 10_000:
            _requests.clear()
            _shapes.clear()
            _plans.clear()
        found = _requests[request] = request
    return found


def _judge(
    request: PodRequest, node: NodeState, name: str, telemetry: TelemetryBoard | None, policy: ScoringPolicy, now: float
) -> tuple[Verdict, float]:
    plan = _plan(node, request, policy)
    if not plan.fits:
        return Verdict(name, False, plan.reason, unresolvable=plan.unresolvable), float("inf")
    headroom, note, valid_until = _headroom(node, plan.telemetry_gpus, telemetry, policy, now)
    components = {**plan.components, "headroom": headroom}
    weights, total_weight = _weights_of(policy)
    value = sum(weights[c] * components.get(c, 0.5) for c in weights) / total_weight
    score = max(0, min(10, round(10 * value)))
    return Verdict(name, True, f"{plan.reason}; {note}", score=score, gpus=plan.gpus, breakdown=components), valid_until


class VerdictMemo:
    """Verdicts by pod shape and node name, for nodes that have not changed since.

    The owner of a ClusterState subscribes :meth:`forget` to it, so a warm lookup is one dict probe
    per node with no check of the node itself (at 5,000 candidates that is what keeps a call within
    a few milliseconds). A shape's whole table expires at the first moment any reading it used turns
    stale.
    """

    def __init__(self) -> None:
        self._tables: dict[int, tuple[dict[str, Verdict], list[float]]] = {}
        self._lock = threading.Lock()

    def table(self, shape: int, now: float) -> dict[str, Verdict]:
        found = self._tables.get(shape)
        if found is None or now >= found[1][0]:
            if len(self._tables) > 256:
                self._tables.clear()
            found = self._tables[shape] = ({}, [float("inf")])
        return found[0]

    def remember(
        self,
        shape: int,
        table: dict[str, Verdict],
        verdict: Verdict,
        valid_until: float,
        still_current: Callable[[], bool],
    ) -> None:
        """Keep a verdict, unless its node changed while it was being worked out (the change notice
        may already have come and gone; both sides hold the lock)."""
        with self._lock:
            if not still_current():
                return
            table[verdict.node] = verdict
            found = self._tables.get(shape)
            if found is not None and valid_until < found[1][0]:
                found[1][0] = valid_until

    def forget(self, names: Iterable[str] | None) -> None:
        with self._lock:
            if names is None:
                self._tables.clear()
                return
            for table, _ in list(self._tables.values()):
                for name in names:
                    table.pop(name, None)


def judge_all(
    request: PodRequest,
    names: list[str],
    nodes: Mapping[str, NodeState],
    telemetry: TelemetryBoard | None,
    policy: ScoringPolicy,
    now: float,
    memo: VerdictMemo | None = None,
) -> list[Verdict]:
    """Verdicts for every candidate node of one pod, in order; ``nodes`` maps names to what is known.

    Memoised on each NodeState (a new one on every change) per request, policy and telemetry refresh,
    until the earliest moment one of the readings used turns stale: a steady cluster costs a lookup
    per node.
    """
    if not request.wants_gpu:
        return [Verdict(name, True, "pod asks for no GPU: not judged", score=0) for name in names]
    request = _canonical(request)
    # One small int per (request, policy, telemetry board, refresh): cheap to hash per node.
    shape_key = (id(request), id(policy), id(telemetry), telemetry.refreshed_at if telemetry is not None else None)
    shape = _shapes.get(shape_key)
    if shape is None:
        if len(_shapes) > 100_000:
            _shapes.clear()
        shape = _shapes[shape_key] = next(_shape_ids)  # never reused: node memos may outlive this map
    out: list[Verdict] = []
    append, lookup = out.append, nodes.get
    known = memo.table(shape, now) if memo is not None else {}
    recall = known.get
    for name in names:
        found = recall(name)
        if found is not None:
            append(found)
            continue
        node = lookup(name)
        if node is None:
            log.info("node %s unknown to gpu-advisor: passed unjudged (fail open)", name)
            append(Verdict(name, True, "unknown to gpu-advisor (not synced yet?): passed unjudged", score=0))
            continue
        hit = node.memo.get(shape)
        if hit is not None and now < hit[1]:
            verdict, valid_until = hit
        else:
            verdict, valid_until = _judge(request, node, name, telemetry, policy, now)
            if len(node.memo) >= _MEMO_PER_NODE:
                node.memo.clear()
            node.memo[shape] = (verdict, valid_until)
        if memo is not None:
            memo.remember(shape, known, verdict, valid_until, lambda n=node, k=name: lookup(k) is n)  # type: ignore[misc]
        append(verdict)
    return out


def evaluate(
    request: PodRequest,
    node: NodeState | None,
    name: str,
    telemetry: TelemetryBoard | None,
    policy: ScoringPolicy,
    now: float,
) -> Verdict:
    """The verdict and score of one candidate node for one pod."""
    return judge_all(request, [name], {name: node} if node is not None else {}, telemetry, policy, now)[0]


def _weights_of(policy: ScoringPolicy) -> tuple[dict[str, float], float]:
    found = _weights.get(id(policy))
    if found is None or found[0] != policy.weights.as_dict():
        weights = policy.weights.as_dict()
        found = _weights[id(policy)] = (weights, sum(weights.values()))
    return found
