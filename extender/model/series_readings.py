"""DCGM exporter samples, however fetched (Prometheus queries, a scraped /metrics page), → readings
per (node, GPU) plus a census of what matched and what did not.

A value no GPU can have is rejected per series, counted by reason and never used: NaN or ±Inf,
negative, SM activity over 100 %, a memory figure over the memory of the node's largest GPU (when
the model knows it). An exporter bug or a forged series must not make a GPU look free, or hold
"nan MiB" of VRAM.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from extender.model.dcgm import SM_FIELDS, field_of, reading_from_fields
from extender.model.readings import GpuReading
from extender.model.series_census import SeriesCensus
from extender.model.series_map import Directory, SeriesMiss, SeriesPlace, place_series

__all__ = ["Sample", "Tally", "readings_from_samples", "rejection"]


@dataclass(frozen=True)
class Sample:
    metric: str  # the DCGM field name, e.g. DCGM_FI_DEV_FB_USED
    labels: Mapping[str, str]  # without __name__
    value: float
    at: float | None  # the sample's own time; None when the source cannot tell
    live: bool = True  # False: the series ended (its exporter stopped answering); this is its last value


@dataclass
class _Gpu:
    values: dict[str, float] = field(default_factory=dict)
    at: float | None = None
    live: bool = False
    pod: str | None = None
    mig: str | None = None

    def add(self, kind: str, sample: Sample, place: SeriesPlace) -> None:
        self.values.setdefault(kind, sample.value)  # one GPU shared by two containers: both say the same
        if sample.at is not None:
            self.at = sample.at if self.at is None else max(self.at, sample.at)
        self.live = self.live or sample.live
        self.pod = self.pod or place.pod
        if place.mig is not None:
            self.mig = place.mig[1] or None


@dataclass
class Tally:
    readings: dict[tuple[str, str], GpuReading]
    census: SeriesCensus
    first_misses: list[tuple[Sample, SeriesMiss]]  # the first unmatched series of each label shape
    rejected: dict[str, int] = field(default_factory=dict)  # series whose value no GPU can have, by reason


_PERCENT_FACTOR = {kind: factor for kind, factor, _ in SM_FIELDS}
_MEMORY_FIELDS = ("fb_used", "fb_free", "fb_reserved")
# Exporters round; the model's memory figure (GFD's label, NVML's total) may differ by a few MiB.
_MEMORY_SLACK = 1.01


def rejection(kind: str, value: float, memory_mib: int | None) -> str | None:
    """Why a value of a DCGM field (by kind) cannot be true of any GPU; None when it can."""
    if not math.isfinite(value):
        return "not finite"
    if value < 0:
        return "negative"
    if kind in _PERCENT_FACTOR and value * _PERCENT_FACTOR[kind] > 100.0 + 1e-9:
        return "over 100 %"
    if kind in _MEMORY_FIELDS and memory_mib is not None and value > memory_mib * _MEMORY_SLACK:
        return "over the GPU's memory"
    return None


def readings_from_samples(samples: Iterable[Sample], where: Directory, fallback_at: float) -> Tally:
    gpus: dict[tuple[str, str], _Gpu] = {}
    census = SeriesCensus()
    first: list[tuple[Sample, SeriesMiss]] = []
    rejected: dict[str, int] = {}
    for sample in samples:
        kind = field_of(sample.metric)
        if kind is None:
            continue
        place = place_series(sample.labels, where)
        if isinstance(place, SeriesMiss):
            if census.miss(sample.metric, sample.labels, place):
                first.append((sample, place))
            continue
        why = rejection(kind, sample.value, where.gpu_memory_mib.get(place.node))
        if why is not None:
            rejected[why] = rejected.get(why, 0) + 1
            continue
        census.match(place.via)
        for key in place.keys:
            gpus.setdefault((place.node, key), _Gpu()).add(kind, sample, place)
    readings = {
        key: reading_from_fields(
            gpu.values, gpu.at if gpu.at is not None else fallback_at, not gpu.live, gpu.pod, gpu.mig
        )
        for key, gpu in gpus.items()
    }
    return Tally(readings, census, first, rejected)
