"""Where every bound pod runs (name, namespace, node, IP), not only the GPU pods the cluster model
keeps: DCGM exporter series name their exporter pod (``Hostname``) or its IP (``instance``), and that
pod's node is where the GPUs are. It keeps each pod's owner metadata too (labels, annotations,
``ownerReferences``), so the history reports group a live cluster's pods by owner as a snapshot's."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from extender.cluster.node import parse_time
from extender.cluster.state import ClusterState, NodeState
from extender.model.series_map import Directory, PodPlace, directory_of_places, pod_place

__all__ = ["PodIndex", "directory_source", "gpu_memory_bounds"]


class PodIndex:
    """Pod placements by uid, kept by the API server watch; read by the telemetry poll."""

    def __init__(self) -> None:
        self._places: dict[str, PodPlace] = {}
        self._meta: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def put(self, kind: str, pod: Mapping[str, Any]) -> None:
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        place = _place(pod) if kind != "DELETED" else None
        with self._lock:
            if place is None:
                self._places.pop(uid, None)
                self._meta.pop(uid, None)
            else:
                self._places[uid] = place
                self._meta[uid] = _owner_meta(pod)

    def reset(self, pods: Iterable[Mapping[str, Any]]) -> None:
        fresh, meta = {}, {}
        for pod in pods:
            place = _place(pod)
            if place is not None:
                uid = str((pod.get("metadata") or {}).get("uid") or "")
                fresh[uid], meta[uid] = place, _owner_meta(pod)
        with self._lock:
            self._places, self._meta = fresh, meta

    def places(self) -> list[PodPlace]:
        with self._lock:
            return list(self._places.values())

    def owned_since(self, owner_uid: str, since: float) -> Counter[str]:
        """How many pods of the controller ``owner_uid`` created at ``since`` or later are bound on each node:
        an applied defragmentation plan's replacement pods (``defrag_board``). Both times are the API
        server's, in whole seconds: a pod of the same second as the plan's intent counts as its."""
        with self._lock:
            found = [(uid, meta) for uid, meta in self._meta.items() if _owned_by(meta, owner_uid)]
            nodes = [(self._places[uid].node, meta) for uid, meta in found if uid in self._places]
        return Counter(n for n, meta in nodes if (parse_time(meta.get("creationTimestamp")) or 0.0) >= since)

    def pods(self) -> list[dict[str, Any]]:
        """The placed pods as Pod objects holding only their owner metadata."""
        with self._lock:
            return [{"kind": "Pod", "metadata": dict(meta)} for meta in self._meta.values()]


_OWNER_META = ("name", "namespace", "uid", "labels", "annotations", "ownerReferences", "creationTimestamp")


def _owned_by(meta: Mapping[str, Any], owner_uid: str) -> bool:
    refs = meta.get("ownerReferences")
    return isinstance(refs, list) and any(isinstance(r, Mapping) and r.get("uid") == owner_uid for r in refs)


def _owner_meta(pod: Mapping[str, Any]) -> dict[str, Any]:
    meta = pod.get("metadata")
    return {k: meta[k] for k in _OWNER_META if k in meta} if isinstance(meta, Mapping) else {}


def _place(pod: Mapping[str, Any]) -> PodPlace | None:
    """Where a pod runs; a pod of a shape that cannot be read is placed nowhere (the cluster model
    counts it as invalid) rather than stopping the index."""
    try:
        return pod_place(pod)
    except (AttributeError, TypeError, ValueError):
        return None


def gpu_memory_bounds(nodes: Mapping[str, NodeState]) -> dict[str, int]:
    """Node → the memory of its largest GPU (MiB), where the model knows it: the most any one
    telemetry value about that node's GPU memory can truthfully say."""
    bounds = {}
    for name, node in nodes.items():
        sizes = [g.memory_mib for g in node.topology.gpus if g.memory_mib] if node.topology else []
        size = max(sizes) if sizes else node.gpu_memory_mib
        if size and size > 0:
            bounds[name] = size
    return bounds


def directory_source(state: ClusterState, pods: PodIndex | Iterable[Mapping[str, Any]]) -> Callable[[], Directory]:
    """What a telemetry source asks before each poll: the model's nodes now, where pods run, and
    how much memory each node's GPUs have."""

    def now(places: Iterable[PodPlace]) -> Directory:
        nodes = state.nodes_by_name()
        return directory_of_places(nodes, places, gpu_memory_bounds(nodes))

    if isinstance(pods, PodIndex):
        index = pods
        return lambda: now(index.places())
    fixed = [p for p in (pod_place(pod) for pod in pods) if p is not None]  # a snapshot: fixed
    return lambda: now(fixed)
