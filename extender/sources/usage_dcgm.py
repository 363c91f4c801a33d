"""How busy each pod's GPUs were over a window, from the DCGM series naming the pod, in one pass over
their samples.

A device's busy hours are Σ over its samples of SM activity × the scrape interval: one
``sum_over_time`` per SM field (the best exported first, ``extender.model.dcgm``; a device's best one
wins), not a mean and a count per bucket (two passes). The interval is a whole bucket's sample count
of the field over the window's last day (as ``extender.sources.sample_coverage`` reads it), over the
whole window only where the last day has no sample. Each pass is split in two halves of the window,
asked at once, so that Prometheus decodes them on two cores. VRAM peaks (``max_over_time`` of the
memory used) are one more pass, read only when asked for.

Series are placed on nodes, GPUs and pods by ``extender.model.series_map``, as the live telemetry's
are; a series that names no pod holding the GPU is not a workload's and is left out.
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.advice.usage import DeviceUse
from extender.model.dcgm import FIELDS, SM_FIELDS
from extender.model.series_map import Directory, SeriesPlace, place_series
from extender.sources.prometheus_query import Key, PrometheusQuery, Vector

__all__ = ["device_use"]

_FULL_BUCKET = "max(max_over_time(count_over_time({n}[{b}ms])[{span}s:{s}s]))"


def _halves(template: str, name: str, window_s: float) -> dict[str, str]:
    """The two halves of the window (each (t − W/2, t]) of ``template`` over ``name``."""
    half = round(window_s * 500)
    inner = f"{name}[{half - 1}ms]"
    return {"a": template.format(inner), "b": template.format(f"{inner} offset {half}ms")}


def _summed(got: Mapping[str, Vector], prefix: str, join: str) -> Vector:
    out: Vector = {}
    for part in ("a", "b"):
        for key, (labels, value) in got.get(f"{prefix}:{part}", {}).items():
            kept = out.get(key)
            merged = value if kept is None else (kept[1] + value if join == "sum" else max(kept[1], value))
            out[key] = (labels, merged)
    return out


def _full_bucket(name: str, span_s: float, bucket_s: float) -> str:
    fill = {"n": name, "b": round(bucket_s * 1000) - 1, "span": round(span_s), "s": round(bucket_s)}
    return _FULL_BUCKET.format(**fill)


def _interval(query: PrometheusQuery, day: Vector, name: str, end: float, window_s: float, bucket_s: float) -> float:
    """The field's scrape interval from its fullest bucket of the last ``day``, else of the whole window."""
    full = max((v for _, v in day.values()), default=0.0)
    if not full and window_s > 86400:
        full = max((v for _, v in query.vector(_full_bucket(name, window_s, bucket_s), end).values()), default=0.0)
    return bucket_s / full if full else 0.0


def device_use(
    query: PrometheusQuery, end: float, window_s: float, bucket_s: float, where: Directory, vram: bool
) -> list[DeviceUse]:
    """Every pod-held device's busy hours over the ``window_s`` before ``end`` (a bucket boundary), with
    its VRAM peak if ``vram``."""
    wanted = [name for names in FIELDS.values() for name in names]
    names = query.names(wanted, end - window_s, end)
    sm = [(factor, n) for kind, factor, _ in SM_FIELDS for n in FIELDS[kind] if n in names]
    queries: dict[str, str] = {}
    for i, (_, n) in enumerate(sm):
        queries |= {f"sm{i}:{part}": q for part, q in _halves("sum_over_time({})", n, window_s).items()}
        queries[f"full{i}"] = _full_bucket(n, min(window_s, 86400), bucket_s)
    for n in (n for n in FIELDS["fb_used"] if n in names and vram):
        queries |= {f"peak:{part}": q for part, q in _halves("max_over_time({})", n, window_s).items()}
    got = query.many(queries, end)
    intervals = [_interval(query, got[f"full{i}"], n, end, window_s, bucket_s) for i, (_, n) in enumerate(sm)]
    peaks = _summed(got, "peak", "max")
    taken: set[Key] = set()
    found = []
    for i, (factor, _) in enumerate(sm):  # best field first: a device's best one wins
        for key, (labels, total) in _summed(got, f"sm{i}", "sum").items():
            place = place_series(labels, where)
            if key in taken or not isinstance(place, SeriesPlace) or place.pod is None:
                continue
            taken.add(key)
            busy = total * factor / 100 * intervals[i] / 3600
            peak = peaks.get(key)
            found.append(DeviceUse(str(place.pod), busy, peak[1] if peak else None, labels.get("modelName") or None))
    return found
