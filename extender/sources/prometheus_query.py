"""A read-only client of the Prometheus HTTP query API, for the history reports (right-sizing, usage).

Any server speaking the same API answers (Prometheus, Thanos, Mimir, VictoriaMetrics). Two calls:
an instant vector (``/api/v1/query``) and a matrix over a range (``/api/v1/query_range``), both keyed by
each series' labels without ``__name__``; and the label sets of the series in a time range
(``/api/v1/series``). A server error becomes a RuntimeError that quotes the query
and what the server said; a server that cannot be reached raises the OSError.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from extender.sources.prometheus import api_get, prometheus_url

__all__ = ["Key", "Matrix", "PrometheusQuery", "Vector", "series_key"]

Key = tuple[tuple[str, str], ...]
Vector = dict[Key, tuple[dict[str, str], float]]  # key → (labels, value)
Matrix = dict[Key, tuple[dict[str, str], list[tuple[float, float]]]]  # key → (labels, [(time, value)])


def series_key(labels: Mapping[str, str]) -> Key:
    return tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))


def _labels(series: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in (series.get("metric") or {}).items()}


class PrometheusQuery:
    """Instant and range queries against one server; ``many`` runs several at once."""

    def __init__(self, url: str, timeout_s: float = 60.0, workers: int = 4) -> None:
        self.url = prometheus_url(url)
        self.timeout_s, self.workers = timeout_s, workers

    def get(self, path: str, params: Mapping[str, Any]) -> Any:
        return api_get(self.url, path, params, self.timeout_s)

    def vector(self, promql: str, at: float) -> Vector:
        data = self.get("/api/v1/query", {"query": promql, "time": at}) or {}
        out: Vector = {}
        for series in data.get("result") or []:
            labels = _labels(series)
            try:
                out[series_key(labels)] = (labels, float(series["value"][1]))
            except (KeyError, IndexError, TypeError, ValueError):
                continue
        return out

    def matrix(self, promql: str, start: float, end: float, step_s: float) -> Matrix:
        data = self.get("/api/v1/query_range", {"query": promql, "start": start, "end": end, "step": step_s}) or {}
        out: Matrix = {}
        for series in data.get("result") or []:
            labels = _labels(series)
            try:
                points = [(float(t), float(v)) for t, v in series.get("values") or []]
            except (TypeError, ValueError):
                continue
            out[series_key(labels)] = (labels, points)
        return out

    def series(self, match: str, start: float, end: float) -> list[dict[str, str]]:
        """The label sets of the series ``match`` selects between ``start`` and ``end``: read from the
        index, no samples decoded (for series whose labels are the news, such as kube_pod_owner)."""
        found = self.get("/api/v1/series", {"match[]": match, "start": start, "end": end}) or []
        return [{str(k): str(v) for k, v in labels.items()} for labels in found if isinstance(labels, dict)]

    def names(self, wanted: list[str], start: float, end: float) -> set[str]:
        """Which of the metric names ``wanted`` have a series between ``start`` and ``end``."""
        match = '{__name__=~"' + "|".join(wanted) + '"}'
        params = {"match[]": match, "start": start, "end": end}
        return {str(n) for n in self.get("/api/v1/label/__name__/values", params) or []}

    def many(self, vectors: Mapping[str, str], at: float) -> dict[str, Vector]:
        """Several instant queries at once (Prometheus answers them in parallel)."""
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            futures = {name: pool.submit(self.vector, q, at) for name, q in vectors.items()}
            return {name: f.result() for name, f in futures.items()}
