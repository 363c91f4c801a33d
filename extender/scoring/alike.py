"""Working out one pod shape's verdicts over thousands of nodes, sharing what alike nodes have alike.

A fleet is a few machine types in a few allocation states: of 5,000 synthetic nodes, under a thousand
differ in anything but their name. So a whole-GPU plan is worked out once per *signature* (everything
of a node state a plan reads, name aside) and handed to every node that has it; a plan whose reason
opens with its node's name (an NVLink refusal) stays that node's own. Live headroom comes from the marks
the refresh already worked out per GPU (``live``), once per node and GPU set per refresh. A pod that
declares VRAM gets, where that VRAM does not change its plan, the very verdict of its twin without the
declaration (``judge``), so its encoded wire fragments are reused too. (A per-node cache of verdicts by
plan and headroom, for any pod shape, was measured to hit never: plans are kept per shape's family, so
two shapes never share a plan object but through that twin; it went, and with it 9 MiB at 5,000 nodes.)

None of this changes a verdict's content: the sharing is by identity of equal things (a test holds the
shared and the unshared paths to the same verdicts).
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import replace
from typing import Any

from extender.cluster.state import NodeState
from extender.placement import Placer
from extender.scoring.headroom import headroom
from extender.scoring.live import LiveReadings
from extender.scoring.memo import PlanKey, Shape
from extender.scoring.node_verdict import FOREVER, Headroom, judged, keep, plan_for, verdict_of
from extender.scoring.plan import Plan, memory_matters
from extender.scoring.verdict import Verdict

__all__ = ["Signature", "Work", "signature"]

_SIGNATURE = object()  # node.memo key of the node's signature
_UNSET = object()


# What ``plan.memory_matters`` reads of a node (how it shares its GPUs, a slot's memory), numbered: a
# few per fleet, and an int hashes for free where a tuple hashes anew at each of 5,000 lookups.
_MEMORY_CLASSES: dict[tuple[str, bool, int | None], int] = {}


def memory_class(node: NodeState) -> int:
    key = (node.sharing, node.time_sliced, node.slot_memory_mib)
    found = _MEMORY_CLASSES.get(key)
    if found is None:
        if len(_MEMORY_CLASSES) >= 4096:  # nodes sent with odd labels: a class of its own, never kept
            return -1 - id(node)
        found = _MEMORY_CLASSES.setdefault(key, len(_MEMORY_CLASSES))
    return found


class Signature:
    """A node state's content but its name. One object per content (interned below), so it hashes and
    compares by identity, in C: families of plans are probed by it at every node of a call."""

    __slots__ = ("__weakref__", "content", "memory", "topology")

    def __init__(self, content: tuple[Any, ...], topology: object) -> None:
        self.content, self.topology = content, topology
        # What ``plan.memory_matters`` reads of the node (see ``Work``), once known: a class number.
        self.memory: int | None = None


def signature(node: NodeState) -> Signature | None:
    """Everything of the node state a plan may read, but its name (a label whose value is the name,
    such as ``kubernetes.io/hostname``, counts as the same); None when it cannot be told (unhashable)."""
    found = node.memo.get(_SIGNATURE, _UNSET)
    if found is _UNSET:
        found = node.memo[_SIGNATURE] = _signature(node)
    return found  # type: ignore[no-any-return]


# Equal signatures as one object, so that probing a plan family by a node's signature is an identity
# check, not a compare of two long tuples (weakly held: they go with the node states that have them).
# The content names its topology by id: the signature holds the topology, so while an entry lives no
# other topology can take that id.
_INTERNED: weakref.WeakValueDictionary[tuple[Any, ...], Signature] = weakref.WeakValueDictionary()


def _signature(node: NodeState) -> Signature | None:
    name = node.name
    try:
        content = (
            tuple(sorted((k, None if v == name else v) for k, v in node.labels.items())),
            tuple(sorted(node.allocatable.items())),
            tuple(sorted(node.capacity.items())),
            id(node.topology),  # topologies are shared per machine type (see _INTERNED)
            node.topology_problem,
            node.free_gpus,
            # The bound pods as a multiset: sorting them compared two requests by ``<``, which a
            # PodRequest does not define, so a node running two different pods (a 1-GPU notebook
            # beside a 2-GPU job) could not be signed and planned every shape on its own.
            frozenset(Counter((p.request, p.holds_all, len(p.assigned)) for p in node.pods).items()),
            tuple(gpus for _, gpus in node.assumed),
            tuple(sorted(node.holders)),
            tuple(tuple(sorted(t.items())) for t in node.taints),
            node.unschedulable,
            node.shares,
            node.cpu_allocatable,
            node.memory_allocatable,
            node.cpu_requested,
            node.memory_requested,
            None if node.report is None else node.report.free,
        )
        found = _INTERNED.get(content)
        if found is None:
            found = _INTERNED.setdefault(content, Signature(content, node.topology))
        return found
    except TypeError:  # something unhashable in a field: this node's plans are its own
        return None


def _family(plans: dict[Hashable, Any], key: PlanKey) -> dict[Signature, Plan | _Named]:
    found = plans.get(key)
    if found is None or len(found) > 100_000:
        found = plans[key] = {}
    return found


class _Named:
    """A refusal that opens with its node's name, kept for alike nodes without the name."""

    __slots__ = ("rest", "unresolvable")

    def __init__(self, plan: Plan, cut: int) -> None:
        self.rest, self.unresolvable = plan.reason[cut:], plan.unresolvable


class Work:
    """One pod shape's verdicts, worked out with what alike nodes share (see the module's text)."""

    def __init__(
        self, shape: Shape, placer: Placer, now: float, plans: dict[Hashable, Any], live: LiveReadings | None
    ) -> None:
        self.shape, self.placer, self.now, self.live = shape, placer, now, live
        request = shape.request
        self.family: dict[Signature, Plan | _Named] | None = None
        self.bare: tuple[PlanKey, dict[Signature, Plan | _Named]] | None = None
        self.matters: dict[Signature, bool] = {}  # does the pod's VRAM change the plan, by signature
        self.by_memory: dict[int, bool] = {}  # … by what it reads of the node (its memory class)
        self.nvlink = request.interconnect == "nvlink" and request.gpus > 1
        self.nvlink_kept: dict[Signature, bool] = {}  # is the twin's plan blind to NVLink being required
        self.holds: dict[Signature, bool] = {}  # is the node's plan its twin's, by signature
        # Whole GPUs only: a shared GPU's or a CPU-only plan reads the pods it shares with by name.
        if request.wants_gpu and request.share is None and not request.mig and not request.invalid:
            if len(plans) > 1000:
                plans.clear()
            self.family = _family(plans, shape.plan_key)
            if request.gpu_memory_mib or request.model is not None or self.nvlink:  # where those change
                key = shape.plan_key  # nothing, the plans of the pod without them (its twin)
                twin = replace(request, gpu_memory_mib=None, interconnect=None, model=None)
                bare = PlanKey(twin, key.policy, key.mix)
                self.bare = (bare, _family(plans, bare))

    def plan(self, node: NodeState) -> Plan:
        key = self.shape.plan_key
        found: Plan | None = node.memo.get(key)
        if found is not None:
            return found
        sig = signature(node) if self.family is not None else None
        if sig is None or self.family is None:
            found = plan_for(node, key, self.placer)
        else:
            family = self.family
            if self.bare is not None and self._twin_holds(node, sig):
                key_for, family = self.bare
            else:
                key_for = key
            kept = family.get(sig)
            if isinstance(kept, Plan):
                return kept  # the family keeps it: no copy on each of thousands of node states
            if kept is not None:  # alike but for the name it opens with: that node's own copy, not kept
                return Plan(False, f"{node.name}: {kept.rest}", unresolvable=kept.unresolvable)
            found = plan_for(node, key_for, self.placer)
            named = found.reason.startswith(f"{node.name}: ")
            # A plan that names its node (an NVLink refusal opens with it) is that node's alone; the
            # family keeps the rest, so an alike node costs a string, not a placement.
            family[sig] = _Named(found, len(node.name) + 2) if named else found
            if not named:
                return found
        keep(node, key, found)
        return found

    def twin_holds(self, node: NodeState) -> bool:
        """True when this node's plan is that of the pod without its VRAM declaration, named model and
        NVLink requirement (the VRAM or the model fits with room wherever the plan looks; the set it
        hands out is NVLink-joined anyway), so its verdict is the one that pod gets: see ``judge``."""
        if self.bare is None:
            return False
        sig = signature(node)
        return sig is not None and self._twin_holds(node, sig)

    def twin_holds_all(self, sigs: list[Signature], node_of: Callable[[Signature], NodeState | None]) -> list[bool]:
        """:meth:`twin_holds` of the nodes with these signatures: worked out once per signature (a few
        hundred kinds of node in a fleet of thousands), then looked up in a pass in C. ``node_of``: a
        node with that signature, for what must be worked out from one."""
        if self.bare is None:
            return [False] * len(sigs)
        holds = {}
        for sig in set(sigs):
            node = node_of(sig)
            holds[sig] = node is not None and self._twin_holds(node, sig)
        return list(map(holds.__getitem__, sigs))

    def _twin_holds(self, node: NodeState, sig: Signature) -> bool:
        found = self.holds.get(sig)
        if found is None:
            found = self.holds[sig] = not self._memory_matters(node, sig) and (
                not self.nvlink or self._nvlink_kept(node, sig)
            )
        return found

    def _nvlink_kept(self, node: NodeState, sig: Signature) -> bool:
        """Is the twin's plan blind to an NVLink requirement (an NVLink-joined set, or a refusal on
        counts)? Placement hands out the same set whether or not NVLink is required (``plan``)."""
        found = self.nvlink_kept.get(sig)
        if found is None and self.bare is not None:
            key, family = self.bare
            twin = family.get(sig)
            if twin is None:
                twin = family[sig] = plan_for(node, key, self.placer)  # the pod without: no name in it
            found = self.nvlink_kept[sig] = isinstance(twin, Plan) and twin.link_blind
        return bool(found)

    def _memory_matters(self, node: NodeState, sig: Signature) -> bool:
        """``plan.memory_matters``, once per signature: it reads nothing of the node but its content."""
        found = self.matters.get(sig)
        if found is None:
            # It reads only how the node shares its GPUs and a slot's memory: the same answer for
            # every signature alike in those (a few per fleet), worked out once.
            memory = sig.memory
            if memory is None:
                memory = sig.memory = memory_class(node)
            found = self.by_memory.get(memory)
            if found is None:
                found = self.by_memory[memory] = memory_matters(node, self.shape.request)
            self.matters[sig] = found
        return found

    def judge(self, node: NodeState, name: str) -> tuple[Verdict, float]:
        found = self.plan(node)
        if not found.fits:
            return verdict_of(node, name, self.shape, found, self.now)[0], FOREVER
        shape, now, live = self.shape, self.now, self.live

        def room_of(p: Plan) -> Headroom:
            gpus = p.telemetry_gpus

            def full() -> Headroom:
                return headroom(node, gpus, shape.telemetry, shape.policy, now)

            return live.headroom(node, gpus, now, full) if live is not None else full()

        return judged(node, name, shape, found, now, self.placer, room_of)
