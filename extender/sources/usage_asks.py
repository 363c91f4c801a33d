"""The GPUs each pod asked for over a window, from kube-state-metrics, at a cost set by the window's
buckets rather than by its raw samples.

A pod's GPU request cannot change (extended resources are not resizable), so one sample of it is as
good as all of them. ``max_over_time(...[30d])`` reads every sample through Prometheus's range-function
path (2.7 CPU-seconds for 1,000 pods scraped every 60 s); a range query of the bare selector at the
bucket step (200 points at most) costs a third of that. A pod that lived between two steps has no
point there: the series index (``/api/v1/series``, no samples read) names every series of the window,
and those the steps missed are asked exactly, ``max_over_time`` over just their pods.

Limits stand in only for a pod with no GPU request (the API server defaults an extended resource's
request to its limit, so in practice never): they are read for the pods the index shows with limits
and no request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from extender.sources.prometheus_query import PrometheusQuery

__all__ = ["GPU_RESOURCES", "Asked", "Pod", "asked_gpus", "pod_regexes"]

GPU_RESOURCES = 'resource=~"nvidia_com_.+|nvidia[.]com/.+|amd_com_gpu|amd[.]com/gpu"'
_PODS_PER_QUERY = 100  # keeps a query's URL to a few kB for the proxies in front of Thanos or Mimir

Pod = tuple[str, str]
Asked = dict[Pod, list[tuple[str, float]]]  # (namespace, pod) → [(resource, count)]


def _pod(labels: dict[str, str]) -> Pod:
    return labels.get("namespace", ""), labels.get("pod", "")


def _add(found: dict[tuple[str, str, str], float], labels: dict[str, str], value: float) -> None:
    key = (*_pod(labels), labels.get("resource", ""))
    found[key] = max(found.get(key, value), value)


def pod_regexes(names: Iterable[str]) -> list[str]:
    """``pod=~`` values matching exactly ``names``, a hundred pods each (escaped for a PromQL string)."""
    ordered = sorted(set(names))
    return [
        "|".join(re.escape(n) for n in ordered[i : i + _PODS_PER_QUERY]).replace("\\", "\\\\")
        for i in range(0, len(ordered), _PODS_PER_QUERY)
    ]


def _exact(query: PrometheusQuery, metric: str, pods: Iterable[Pod], end: float, window: str) -> Asked:
    """``max_over_time`` of ``metric`` for just ``pods``, a hundred pods a query."""
    wanted = set(pods)
    found: dict[tuple[str, str, str], float] = {}
    for regex in pod_regexes(name for _, name in wanted):
        selector = f'{metric}{{{GPU_RESOURCES},pod=~"{regex}"}}'
        promql = f"sum by (namespace, pod, resource) (max_over_time({selector}[{window}]))"
        for labels, value in query.vector(promql, end).values():
            if _pod(labels) in wanted:  # a namesake in another namespace is not asked about
                _add(found, labels, value)
    return _grouped(found)


def _grouped(found: dict[tuple[str, str, str], float]) -> Asked:
    out: Asked = {}
    for (namespace, name, resource), value in sorted(found.items()):
        out.setdefault((namespace, name), []).append((resource, value))
    return out


def asked_gpus(query: PrometheusQuery, end: float, window_s: float, step_s: float) -> Asked:
    """Each pod's GPU asks over the ``window_s`` before ``end``: requests, else limits."""
    window = f"{round(window_s)}s"
    requests = f"kube_pod_container_resource_requests{{{GPU_RESOURCES}}}"
    sampled = query.matrix(f"sum by (namespace, pod, resource) ({requests})", end - window_s + step_s, end, step_s)
    found: dict[tuple[str, str, str], float] = {}
    for labels, points in sampled.values():
        for _, value in points:
            _add(found, labels, value)
    asked = _grouped(found)
    indexed = {_pod(labels) for labels in query.series(requests, end - window_s, end)}
    asked |= _exact(query, "kube_pod_container_resource_requests", indexed - set(asked), end, window)
    limits = f"kube_pod_container_resource_limits{{{GPU_RESOURCES}}}"
    limited = {_pod(labels) for labels in query.series(limits, end - window_s, end)} - indexed
    return asked | _exact(query, "kube_pod_container_resource_limits", limited, end, window)
