"""DCGM exporter samples, however fetched (Prometheus queries, a scraped /metrics page), → readings
per (node, GPU) plus a census of what matched and what did not."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from extender.model.dcgm import field_of, reading_from_fields
from extender.model.readings import GpuReading
from extender.model.series_census import SeriesCensus
from extender.model.series_map import Directory, SeriesMiss, SeriesPlace, place_series

__all__ = ["Sample", "Tally", "readings_from_samples"]


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


def readings_from_samples(samples: Iterable[Sample], where: Directory, fallback_at: float) -> Tally:
    gpus: dict[tuple[str, str], _Gpu] = {}
    census = SeriesCensus()
    first: list[tuple[Sample, SeriesMiss]] = []
    for sample in samples:
        kind = field_of(sample.metric)
        if kind is None:
            continue
        place = place_series(sample.labels, where)
        if isinstance(place, SeriesMiss):
            if census.miss(sample.metric, sample.labels, place):
                first.append((sample, place))
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
    return Tally(readings, census, first)
