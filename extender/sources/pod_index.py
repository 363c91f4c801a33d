"""Where every bound pod runs (name, namespace, node, IP), not only the GPU pods the cluster model
keeps: DCGM exporter series name their exporter pod (``Hostname``) or its IP (``instance``), and that
pod's node is where the GPUs are."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from extender.cluster.state import ClusterState
from extender.model.series_map import Directory, PodPlace, directory_of_places, pod_place

__all__ = ["PodIndex", "directory_source"]


class PodIndex:
    """Pod placements by uid, kept by the API server watch; read by the telemetry poll."""

    def __init__(self) -> None:
        self._places: dict[str, PodPlace] = {}
        self._lock = threading.Lock()

    def put(self, kind: str, pod: Mapping[str, Any]) -> None:
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        place = pod_place(pod) if kind != "DELETED" else None
        with self._lock:
            if place is None:
                self._places.pop(uid, None)
            else:
                self._places[uid] = place

    def reset(self, pods: Iterable[Mapping[str, Any]]) -> None:
        fresh = {}
        for pod in pods:
            place = pod_place(pod)
            if place is not None:
                fresh[str((pod.get("metadata") or {}).get("uid") or "")] = place
        with self._lock:
            self._places = fresh

    def places(self) -> list[PodPlace]:
        with self._lock:
            return list(self._places.values())


def directory_source(state: ClusterState, pods: PodIndex | Iterable[Mapping[str, Any]]) -> Callable[[], Directory]:
    """What a telemetry source asks before each poll: the model's nodes now, and where pods run."""
    if isinstance(pods, PodIndex):
        index = pods
        return lambda: directory_of_places(state.nodes_by_name(), index.places())
    places = [p for p in (pod_place(pod) for pod in pods) if p is not None]  # a snapshot: fixed
    return lambda: directory_of_places(state.nodes_by_name(), places)
