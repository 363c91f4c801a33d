"""Where a served advisor reads history: GET /v1/rightsize's GPU series and GET /v1/usage's pod
allocations, from Prometheus or the simulated cluster's synthetic history (None: not offered)."""

from __future__ import annotations

from functools import partial
from typing import Any

from extender.advice.rightsize import HistorySource
from extender.advice.usage import UsageSource
from extender.cluster.state import ClusterState
from extender.sources.cluster_choice import SIMULATED
from extender.sources.gpu_history import GpuHistory
from extender.sources.pod_index import PodIndex, directory_source
from extender.sources.simulated_history import simulated_history
from extender.sources.simulated_usage import simulated_usage
from extender.sources.snapshot import simulated_cluster
from extender.sources.usage_history import UsageHistory

__all__ = ["history_source", "usage_source"]


def history_source(
    cluster: str, prometheus: str | None, state: ClusterState, pods: PodIndex | list[dict[str, Any]]
) -> HistorySource | None:
    """GET /v1/rightsize's history: Prometheus's, else the simulated cluster's synthetic one, else none.
    The live watch's pod index keeps each pod's owner references; a gone pod's name tells its owner."""
    if prometheus:
        where = directory_source(state, pods)
        history = GpuHistory(prometheus)
        objects = pods.pods if isinstance(pods, PodIndex) else partial(list, pods)
        return HistorySource(lambda end, window: history.series(end, window, where()), objects, history.url)
    if cluster == SIMULATED:
        snap = simulated_cluster()
        return HistorySource(lambda end, _: simulated_history(snap, end), lambda: snap.pods, "synthetic history")
    return None


def usage_source(
    cluster: str, prometheus: str | None, state: ClusterState, pods: PodIndex | list[dict[str, Any]]
) -> UsageSource | None:
    """GET /v1/usage's history: Prometheus's, else the simulated cluster's synthetic one, else none."""
    if prometheus:
        where = directory_source(state, pods)
        history = UsageHistory(prometheus)
        return UsageSource(lambda end, window: history.pods(end, window, where()), history.url)
    if cluster == SIMULATED:
        snap = simulated_cluster()
        return UsageSource(lambda end, window: simulated_usage(snap, end, window), "synthetic history")
    return None
