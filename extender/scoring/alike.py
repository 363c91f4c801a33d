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
from collections.abc import Hashable
from dataclasses import replace
from itertools import compress, repeat
from operator import attrgetter, is_, methodcaller, not_
from typing import Any

from extender.cluster.state import NodeState
from extender.placement import Placer
from extender.scoring.headroom import headroom
from extender.scoring.live import LiveReadings
from extender.scoring.memo import PlanKey, Shape
from extender.scoring.node_verdict import Headroom, keep, plan_for, verdict_of
from extender.scoring.plan import Plan, memory_matters
from extender.scoring.verdict import Verdict

__all__ = ["Signature", "Work", "signature"]

_SIGNATURE = object()  # node.memo key of the node's signature
_UNSET = object()
_MEMO, _SIGNED = attrgetter("memo"), methodcaller("get", _SIGNATURE)  # a node's signature, if worked out
_MEMORY_CLASS = attrgetter("memory")


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
    """A node state's content but its name, with its hash worked out once (probed per node)."""

    __slots__ = ("__weakref__", "_hash", "content", "memory", "topology")

    def __init__(self, content: tuple[Any, ...], topology: object) -> None:
        self.content, self.topology = content, topology
        self._hash = hash(content)
        # What ``plan.memory_matters`` reads of the node (see ``Work``), once known: a class number.
        self.memory: int | None = None

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, Signature) and self.topology is other.topology and self.content == other.content
        )


def signature(node: NodeState) -> Signature | None:
    """Everything of the node state a plan may read, but its name (a label whose value is the name,
    such as ``kubernetes.io/hostname``, counts as the same); None when it cannot be told (unhashable)."""
    found = node.memo.get(_SIGNATURE, _UNSET)
    if found is _UNSET:
        found = node.memo[_SIGNATURE] = _signature(node)
    return found  # type: ignore[no-any-return]


# Equal signatures as one object, so that probing a plan family by a node's signature is an identity
# check, not a compare of two long tuples (weakly held: they go with the node states that have them).
_INTERNED: weakref.WeakValueDictionary[Signature, Signature] = weakref.WeakValueDictionary()


def _signature(node: NodeState) -> Signature | None:
    name = node.name
    try:
        content = (
            tuple(sorted((k, None if v == name else v) for k, v in node.labels.items())),
            tuple(sorted(node.allocatable.items())),
            tuple(sorted(node.capacity.items())),
            id(node.topology),  # topologies are shared per machine type; compared by identity below
            node.topology_problem,
            node.free_gpus,
            tuple(sorted((p.request, p.holds_all, len(p.assigned)) for p in node.pods)),
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
        found = Signature(content, node.topology)
        return _INTERNED.setdefault(found, found)
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
        # Whole GPUs only: a shared GPU's or a CPU-only plan reads the pods it shares with by name.
        if request.wants_gpu and request.share is None and not request.mig and not request.invalid:
            if len(plans) > 1000:
                plans.clear()
            self.family = _family(plans, shape.plan_key)
            if request.gpu_memory_mib:  # where VRAM does not matter, the plans of the pod without it
                key = shape.plan_key
                bare = PlanKey(replace(request, gpu_memory_mib=None), key.policy, key.mix)
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
            if self.bare is not None and not self._memory_matters(node, sig):
                key_for, family = self.bare
            else:
                key_for = key
            kept = family.get(sig)
            if isinstance(kept, Plan):
                return kept  # the family keeps it: no copy on each of thousands of node states
            if kept is not None:  # alike but for the name it opens with: that node's own copy
                found = Plan(False, f"{node.name}: {kept.rest}", unresolvable=kept.unresolvable)
            else:
                found = plan_for(node, key_for, self.placer)
                named = found.reason.startswith(f"{node.name}: ")
                # A plan that names its node (an NVLink refusal opens with it) is that node's alone;
                # the family keeps the rest, so an alike node costs a string, not a placement.
                family[sig] = _Named(found, len(node.name) + 2) if named else found
                if not named:
                    return found
        keep(node, key, found)
        return found

    def vram_idle(self, node: NodeState) -> bool:
        """True when this node's plan is the pod's without its VRAM declaration (the VRAM fits
        wherever the plan looks), so its verdict is the one that pod gets: see ``judge``."""
        if self.bare is None:
            return False
        sig = signature(node)
        return sig is not None and not self._memory_matters(node, sig)

    def vram_idle_all(self, nodes: list[NodeState]) -> list[bool]:
        """:meth:`vram_idle` of each node, in passes in C: the answer is per memory class (how the
        node shares its GPUs, their slot memory), which each signature keeps once worked out, so a new
        VRAM figure costs a Python call per kind of memory, not one per node."""
        if self.bare is None:
            return [False] * len(nodes)
        sigs = list(map(_SIGNED, map(_MEMO, nodes)))
        if any(map(is_, sigs, repeat(None))):
            return list(map(self.vram_idle, nodes))  # a node not signed yet (or unsignable): one by one
        classes = list(map(_MEMORY_CLASS, sigs))
        for i in compress(range(len(nodes)), map(is_, classes, repeat(None))):
            self._memory_matters(nodes[i], sigs[i])  # works the class out and keeps it on the signature
            classes[i] = sigs[i].memory
        by_memory = self.by_memory
        for memory in set(classes).difference(by_memory):
            by_memory[memory] = memory_matters(nodes[classes.index(memory)], self.shape.request)
        return list(map(not_, map(by_memory.__getitem__, classes)))

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
            return verdict_of(node, name, self.shape, found, self.now)[0], float("inf")
        shape, now, gpus = self.shape, self.now, found.telemetry_gpus

        def full() -> Headroom:
            return headroom(node, gpus, shape.telemetry, shape.policy, now)

        room = self.live.headroom(node, gpus, now, full) if self.live is not None else full()
        return verdict_of(node, name, shape, found, now, room)[0], room[2]
