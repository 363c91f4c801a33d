"""Each GPU's history over a window from Prometheus: the statistics of the DCGM series of every pod.

Prometheus computes them over every raw sample, one instant query per statistic at the window's end,
so a week of 1,000 workloads is a few dozen queries, not millions of points over the wire:

- SM activity (the best field exported, ``extender.model.dcgm``): ``quantile_over_time`` 0.5 and 0.95,
  ``max_over_time``, ``avg_over_time``, ``count_over_time``, and the first and last sample times
  (``min/max_over_time(timestamp(F)[W:R])``, exact to the sample);
- VRAM used: ``quantile_over_time(0.95)`` and ``max_over_time``; the GPU's memory: the last used + free.

Hours observed are the samples × the series' own scrape interval ((last − first) ÷ (samples − 1)).
Series are placed on nodes, GPUs and pods by ``extender.model.series_map``, as the live telemetry's are;
a series that names no pod holding the GPU is not a workload's and is left out.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from extender.advice.rightsize import GpuSeries
from extender.model.dcgm import FIELDS, SM_FIELDS
from extender.model.series_map import Directory, SeriesPlace, place_series
from extender.sources.prometheus import prometheus_url

__all__ = ["GpuHistory", "parse_window"]

_Key = tuple[tuple[str, str], ...]
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_STATS = {
    "p50": "quantile_over_time(0.5, {n}[{w}])",
    "p95": "quantile_over_time(0.95, {n}[{w}])",
    "max": "max_over_time({n}[{w}])",
    "mean": "avg_over_time({n}[{w}])",
    "count": "count_over_time({n}[{w}])",
    "first": "min_over_time(timestamp({n})[{w}:{r}])",
    "last": "max_over_time(timestamp({n})[{w}:{r}])",
}
_VRAM = {"p95": _STATS["p95"], "max": _STATS["max"], "now": "last_over_time({n}[{w}])"}


def parse_window(text: str) -> float:
    """``7d``, ``36h``, ``90m`` → seconds; anything else is a ValueError saying what is expected."""
    raw = text.strip().lower()
    unit = _UNITS.get(raw[-1:]) if raw else None
    try:
        value = float(raw[:-1]) if unit else float("nan")
    except ValueError:
        value = float("nan")
    if unit is None or not value > 0 or value * unit > 90 * 86400:
        raise ValueError(f"window {text!r} is not a duration such as 7d, 36h or 90m (at most 90d)")
    return value * unit


def _key(labels: Mapping[str, str]) -> _Key:
    return tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))


class GpuHistory:
    """Reads the window's per-GPU statistics from a Prometheus server's query API."""

    def __init__(self, url: str, timeout_s: float = 60.0, resolution_s: float = 300.0, workers: int = 4) -> None:
        self.url = prometheus_url(url)
        self.timeout_s, self.resolution_s, self.workers = timeout_s, resolution_s, workers

    def _get(self, path: str, params: Mapping[str, Any]) -> Any:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params, doseq=True)}"
        try:
            with urllib.request.urlopen(url, timeout=self.timeout_s) as resp:
                doc = json.load(resp)
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"prometheus answered HTTP {exc.code} to {params.get('query', path)!r}") from None
        if not isinstance(doc, dict) or doc.get("status") != "success":
            raise RuntimeError(f"prometheus answered {params.get('query', path)!r} with an error: {doc}")
        return doc.get("data")

    def _vector(self, promql: str, at: float) -> dict[_Key, tuple[dict[str, str], float]]:
        data = self._get("/api/v1/query", {"query": promql, "time": at}) or {}
        out = {}
        for series in data.get("result") or []:
            labels = {k: str(v) for k, v in (series.get("metric") or {}).items()}
            try:
                out[_key(labels)] = (labels, float(series["value"][1]))
            except (KeyError, IndexError, TypeError, ValueError):
                continue
        return out

    def _names(self, start: float, end: float) -> set[str]:
        """The DCGM field names with a series in the window (one cheap index lookup)."""
        wanted = [name for names in FIELDS.values() for name in names]
        match = '{__name__=~"' + "|".join(wanted) + '"}'
        params = {"match[]": match, "start": start, "end": end}
        return {str(n) for n in self._get("/api/v1/label/__name__/values", params) or []}

    def _stats(self, queries: Mapping[str, str], end: float) -> dict[str, dict[_Key, tuple[dict[str, str], float]]]:
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            futures = {stat: pool.submit(self._vector, q, end) for stat, q in queries.items()}
            return {stat: f.result() for stat, f in futures.items()}

    def series(self, end: float, window_s: float, where: Directory) -> list[GpuSeries]:
        """Every pod-held GPU's statistics over ``window_s`` up to ``end``."""
        names = self._names(end - window_s, end)
        w, r = f"{round(window_s)}s", f"{round(self.resolution_s)}s"
        queries: dict[str, str] = {}
        sm_names = [(kind, factor, n) for kind, factor, _ in SM_FIELDS for n in FIELDS[kind] if n in names]
        for i, (_, _, n) in enumerate(sm_names):
            queries.update({f"sm{i}:{stat}": q.format(n=n, w=w, r=r) for stat, q in _STATS.items()})
        for kind in ("fb_used", "fb_free"):
            for n in (n for n in FIELDS[kind] if n in names):
                queries.update({f"{kind}:{stat}": q.format(n=n, w=w) for stat, q in _VRAM.items()})
        got = self._stats(queries, end)
        taken: set[_Key] = set()
        found = []
        for i, (_, factor, _) in enumerate(sm_names):  # best field first: a GPU's best one wins
            for key, (labels, count) in got[f"sm{i}:count"].items():
                if key in taken:
                    continue
                place = place_series(labels, where)
                if not isinstance(place, SeriesPlace) or place.pod is None:
                    continue
                taken.add(key)
                stats = {stat: got[f"sm{i}:{stat}"].get(key, (labels, 0.0))[1] for stat in _STATS}
                found.append(_gpu_series(place, labels, stats, factor, count, got, key))
        return found


def _value(got: Mapping[str, Mapping[_Key, tuple[dict[str, str], float]]], name: str, key: _Key) -> float | None:
    hit = got.get(name, {}).get(key)
    return hit[1] if hit else None


def _gpu_series(
    place: SeriesPlace,
    labels: Mapping[str, str],
    stats: Mapping[str, float],
    factor: float,
    count: float,
    got: Mapping[str, Mapping[_Key, tuple[dict[str, str], float]]],
    key: _Key,
) -> GpuSeries:
    first, last = stats["first"], stats["last"]
    interval = (last - first) / (count - 1) if count > 1 else 0.0
    used, free = _value(got, "fb_used:now", key), _value(got, "fb_free:now", key)
    gpu = place.keys[0] if place.keys else "?"
    return GpuSeries(
        pod=str(place.pod),
        node=place.node,
        gpu=gpu,
        product=labels.get("modelName") or None,
        memory_total_mib=used + free if used is not None and free is not None else None,
        sm_p50=stats["p50"] * factor,
        sm_p95=stats["p95"] * factor,
        sm_max=stats["max"] * factor,
        sm_mean=stats["mean"] * factor,
        vram_p95_mib=_value(got, "fb_used:p95", key),
        vram_peak_mib=_value(got, "fb_used:max", key),
        first=first,
        last=last,
        hours=count * interval / 3600,
        mig=place.mig is not None,
    )
