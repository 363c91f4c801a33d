"""Each GPU's history over a window from Prometheus: the statistics of the DCGM series of every pod.

Prometheus computes them over every raw sample, one instant query per statistic at the window's end,
so a week of 1,000 workloads is a dozen queries, not millions of points over the wire:

- SM activity (the best field exported, ``extender.model.dcgm``): ``quantile_over_time`` 0.5 and 0.95,
  ``max_over_time``, ``avg_over_time``;
- VRAM used: ``quantile_over_time(0.95)`` and ``max_over_time``; the GPU's memory: the last used + free;
- the samples per bucket (``count_over_time`` over one range query), from which
  ``extender.sources.sample_coverage`` counts the hours observed and the first and last sample.

The window ends at a bucket boundary, so every statistic and every bucket covers the same samples.
Series are placed on nodes, GPUs and pods by ``extender.model.series_map``, as the live telemetry's are;
a series that names no pod holding the GPU is not a workload's and is left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor

from extender.advice.rightsize import GpuSeries
from extender.model.dcgm import FIELDS, SM_FIELDS
from extender.model.series_map import Directory, SeriesPlace, place_series
from extender.sources.prometheus_query import Key, Matrix, PrometheusQuery, Vector
from extender.sources.sample_coverage import Coverage, bucket_seconds, coverage, interval_of, usual_interval

__all__ = ["GpuHistory", "parse_window", "sample_buckets"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_STATS = {
    "p50": "quantile_over_time(0.5, {n}[{w}])",
    "p95": "quantile_over_time(0.95, {n}[{w}])",
    "max": "max_over_time({n}[{w}])",
    "mean": "avg_over_time({n}[{w}])",
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


def sample_buckets(
    query: PrometheusQuery, selector: str, end: float, window_s: float
) -> tuple[float, float, dict[Key, Coverage], Matrix]:
    """(the window's aligned end, bucket width, each series' coverage, the bucket counts) of ``selector``."""
    bucket = bucket_seconds(window_s)
    end = end // bucket * bucket
    counts = query.matrix(
        f"count_over_time({selector}[{round(bucket * 1000) - 1}ms])", end - window_s + bucket, end, bucket
    )
    own = {key: interval_of(points, bucket) for key, (_, points) in counts.items()}
    usual = usual_interval(own.values())
    found = {}
    for key, (_, points) in counts.items():
        got = coverage(points, bucket, own[key] or usual)
        if got is not None:
            found[key] = got
    return end, bucket, found, counts


class GpuHistory:
    """Reads the window's per-GPU statistics from a Prometheus server's query API."""

    def __init__(self, url: str, timeout_s: float = 60.0, workers: int = 4) -> None:
        self.query = PrometheusQuery(url, timeout_s, workers)
        self.url = self.query.url

    def series(
        self,
        end: float,
        window_s: float,
        where: Directory,
        stats: Iterable[str] = tuple(_STATS),
        vram: Iterable[str] = tuple(_VRAM),
    ) -> list[GpuSeries]:
        """Every pod-held GPU's statistics over ``window_s`` up to ``end`` (aligned down to a bucket);
        only the SM ``stats`` and VRAM ``vram`` named are asked for (the others read 0 and None)."""
        sm_stats, vram_stats = {k: _STATS[k] for k in stats}, {k: _VRAM[k] for k in vram}
        wanted = [name for names in FIELDS.values() for name in names]
        names = self.query.names(wanted, end - window_s, end)
        end = end // bucket_seconds(window_s) * bucket_seconds(window_s)
        w = f"{round(window_s)}s"
        queries: dict[str, str] = {}
        sm_names = [(factor, n) for kind, factor, _ in SM_FIELDS for n in FIELDS[kind] if n in names]
        for i, (_, n) in enumerate(sm_names):
            queries.update({f"sm{i}:{stat}": q.format(n=n, w=w) for stat, q in sm_stats.items()})
        for n in (n for n in FIELDS["fb_used"] if n in names):
            queries.update({f"fb_used:{stat}": q.format(n=n, w=w) for stat, q in vram_stats.items()})
        for n in (n for n in FIELDS["fb_free"] if n in names and "now" in vram_stats):
            queries["fb_free:now"] = _VRAM["now"].format(n=n, w=w)
        with ThreadPoolExecutor(max_workers=len(sm_names) + 1) as pool:  # the range queries beside the rest
            buckets = [pool.submit(sample_buckets, self.query, name, end, window_s) for _, name in sm_names]
            got = self.query.many(queries, end)
            spans_of = [b.result() for b in buckets]
        taken: set[Key] = set()
        found = []
        for i, (factor, _) in enumerate(sm_names):  # best field first: a GPU's best one wins
            _, _, spans, counts = spans_of[i]
            for key, span in spans.items():
                labels = counts[key][0]
                if key in taken:
                    continue
                place = place_series(labels, where)
                if not isinstance(place, SeriesPlace) or place.pod is None:
                    continue
                taken.add(key)
                values = {
                    stat: got[f"sm{i}:{stat}"].get(key, (labels, 0.0))[1] if stat in sm_stats else 0.0
                    for stat in _STATS
                }
                found.append(_gpu_series(place, labels, values, factor, span, got, key))
        return found


def _value(got: Mapping[str, Vector], name: str, key: Key) -> float | None:
    hit = got.get(name, {}).get(key)
    return hit[1] if hit else None


def _gpu_series(
    place: SeriesPlace,
    labels: Mapping[str, str],
    stats: Mapping[str, float],
    factor: float,
    span: Coverage,
    got: Mapping[str, Vector],
    key: Key,
) -> GpuSeries:
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
        first=span.first,
        last=span.last,
        hours=span.hours,
        mig=place.mig is not None,
    )
