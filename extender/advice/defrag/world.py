"""The cluster a plan rearranges: Node and Pod objects, and the advisor's model of them after each move.

A move rewrites one Pod (``spec.nodeName``, and the GPU record a share binder writes) and rebuilds the
two nodes it touches with ``cluster.node_state``, exactly as a source would build them from the API
server. A rebuilt node leaves out the agent's free-GPU report: the report predates the move, so its
pods alone say which GPUs are held.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from extender.advice.defrag.movable import pod_key
from extender.cluster.shares import ALIBABA_INDEX, ALIYUN_INDEX, HAMI_ALLOCATED, HAMI_TO_ALLOCATE
from extender.cluster.state import ANNOTATION_FREE_GPUS, BoundPod, MachineTypes, NodeState, bound_pod, node_state

__all__ = ["World"]

_RECORDS = (ALIBABA_INDEX, ALIYUN_INDEX, HAMI_ALLOCATED, HAMI_TO_ALLOCATE)


class World:
    """Immutable: :meth:`moved` and :meth:`without` return a new world sharing what did not change."""

    def __init__(
        self,
        nodes: Mapping[str, Mapping[str, Any]],
        placed: Mapping[str, tuple[Mapping[str, Any], ...]],
        states: Mapping[str, NodeState],
        machines: MachineTypes,
    ) -> None:
        self.nodes, self.placed, self.states, self.machines = nodes, placed, states, machines

    @classmethod
    def of(
        cls, nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]], states: Mapping[str, NodeState]
    ) -> World:
        """The world of a snapshot's objects, with the model already built of them (``states``)."""
        by_name = {str((n.get("metadata") or {}).get("name", "")): n for n in nodes}
        placed: dict[str, list[Mapping[str, Any]]] = {name: [] for name in by_name}
        for pod in pods:
            found = bound_pod(pod)
            if found is not None and found[0] in placed:
                placed[found[0]].append(pod)
        return cls(by_name, {k: tuple(v) for k, v in placed.items()}, dict(states), MachineTypes())

    def node_of(self, key: str) -> str | None:
        return next((n for n, pods in self.placed.items() if any(pod_key(p) == key for p in pods)), None)

    def pod(self, key: str) -> Mapping[str, Any] | None:
        return next((p for pods in self.placed.values() for p in pods if pod_key(p) == key), None)

    def bound(self) -> list[tuple[str, BoundPod, Mapping[str, Any]]]:
        """(node, the model's pod, its object) for every GPU pod, by node then pod."""
        out = []
        for name in sorted(self.placed):
            held = {p.key: p for p in self.states[name].pods} if name in self.states else {}
            out += [(name, held[pod_key(p)], p) for p in self.placed[name] if pod_key(p) in held]
        return out

    def without(self, key: str) -> World:
        """The world with the pod gone (evicted, not yet placed again)."""
        source = self.node_of(key)
        if source is None:
            raise KeyError(key)
        kept = tuple(p for p in self.placed[source] if pod_key(p) != key)
        return self._with({source: kept})

    def moved(self, key: str, target: str, gpus: tuple[int, ...] | None) -> World:
        """The world with the pod on ``target`` (on ``gpus``, when the advisor said which)."""
        pod = self.pod(key)
        if pod is None:
            raise KeyError(key)
        gone = self.without(key)
        return gone._with({target: (*gone.placed[target], _rebound(pod, target, gpus))})

    def _with(self, changes: Mapping[str, tuple[Mapping[str, Any], ...]]) -> World:
        placed, states = dict(self.placed), dict(self.states)
        for name, pods in changes.items():
            placed[name] = pods
            node = _unreported(self.nodes[name])
            held = [found[1] for found in map(bound_pod, pods) if found is not None]
            states[name] = node_state(node, held, self.machines)
        return World(self.nodes, placed, states, self.machines)


def _unreported(node: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = node.get("metadata") or {}
    notes = meta.get("annotations") or {}
    if ANNOTATION_FREE_GPUS not in notes:
        return node
    kept = {k: v for k, v in notes.items() if k != ANNOTATION_FREE_GPUS}
    return {**node, "metadata": {**meta, "annotations": kept}}


def _rebound(pod: Mapping[str, Any], target: str, gpus: tuple[int, ...] | None) -> Mapping[str, Any]:
    """The pod as its replacement will be bound on ``target``: a share binder's record names the new GPUs."""
    meta = dict(pod.get("metadata") or {})
    notes = dict(meta.get("annotations") or {})
    had = [k for k in _RECORDS if k in notes]
    for k in had:
        del notes[k]
    if gpus and ALIBABA_INDEX in had:
        notes[ALIBABA_INDEX] = "-".join(map(str, gpus))
    elif gpus and ALIYUN_INDEX in had:
        notes[ALIYUN_INDEX] = str(gpus[0])
    meta["annotations"] = notes
    return {**pod, "metadata": meta, "spec": {**(pod.get("spec") or {}), "nodeName": target}}
