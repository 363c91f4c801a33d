"""What a workload did with its GPUs over a window: the per-GPU statistics Prometheus computes, summed
up per owner.

One :class:`GpuSeries` is one GPU (or MIG instance) held by one pod: SM activity quantiles over every
sample, VRAM p95 and peak, and the hours it was observed. A workload's figures:

- hours observed: the union of its series' spans (replicas that overlap count once, a replaced pod's
  successor adds its own time);
- GPU-hours held: Σ series hours; GPUs held: GPU-hours held ÷ hours observed (replicas on average);
- GPU-hours used: Σ series hours × mean SM activity; held idle: held − used;
- SM p50/p95: the hour-weighted mean of its GPUs' (what one of its GPUs typically does); SM max: the highest;
- VRAM p95/peak: the highest of its GPUs' (what one GPU, or slice, must hold);
- demand: Σ series hours × SM p95 ÷ hours observed, the GPUs' worth of SM time it needs at p95 at once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from extender.advice.rightsize.owners import Owner

__all__ = ["GpuSeries", "WorkloadUsage", "workloads"]


@dataclass(frozen=True)
class GpuSeries:
    pod: str  # "namespace/name"
    node: str
    gpu: str  # UUID, or "#index"; MIG instances "…:mig<id>"
    product: str | None  # the DCGM modelName, e.g. "NVIDIA H100 80GB HBM3"
    memory_total_mib: float | None
    sm_p50: float  # percent
    sm_p95: float
    sm_max: float
    sm_mean: float
    vram_p95_mib: float | None
    vram_peak_mib: float | None
    first: float  # unix seconds of the first and last sample
    last: float
    hours: float
    mig: bool = False


@dataclass(frozen=True)
class WorkloadUsage:
    owner: Owner
    pods: tuple[str, ...]
    series: tuple[GpuSeries, ...]
    hours_observed: float
    gpu_hours_held: float
    gpu_hours_used: float
    sm_p50: float
    sm_p95: float
    sm_max: float
    vram_p95_mib: float | None
    vram_peak_mib: float | None
    sm_demand_gpus: float
    latency_sensitive: bool

    @property
    def gpus_held(self) -> float:
        return self.gpu_hours_held / self.hours_observed if self.hours_observed else 0.0

    @property
    def gpus_used(self) -> float:
        return self.gpu_hours_used / self.hours_observed if self.hours_observed else 0.0

    @property
    def gpu_hours_idle(self) -> float:
        return self.gpu_hours_held - self.gpu_hours_used

    @property
    def product(self) -> str | None:
        return next((s.product for s in self.series if s.product), None)

    @property
    def memory_total_mib(self) -> float | None:
        return max((s.memory_total_mib for s in self.series if s.memory_total_mib), default=None)

    @property
    def on_mig(self) -> bool:
        return any(s.mig for s in self.series)


def _union_hours(spans: Iterable[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for start, stop in sorted(spans):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total / 3600


def _weighted(series: tuple[GpuSeries, ...], value: Callable[[GpuSeries], float]) -> float:
    hours = sum(s.hours for s in series)
    return sum(value(s) * s.hours for s in series) / hours if hours else 0.0


def _usage(owner: Owner, series: tuple[GpuSeries, ...], latency_sensitive: bool) -> WorkloadUsage:
    # A series' span is its first to last sample, plus one scrape interval: n samples cover n intervals.
    spans = [(s.first, s.first + s.hours * 3600) for s in series]
    hours = _union_hours(spans)
    peaks = [s.vram_peak_mib for s in series if s.vram_peak_mib is not None]
    p95s = [s.vram_p95_mib for s in series if s.vram_p95_mib is not None]
    return WorkloadUsage(
        owner=owner,
        pods=tuple(sorted({s.pod for s in series})),
        series=series,
        hours_observed=hours,
        gpu_hours_held=sum(s.hours for s in series),
        gpu_hours_used=sum(s.hours * s.sm_mean / 100 for s in series),
        sm_p50=_weighted(series, lambda s: s.sm_p50),
        sm_p95=_weighted(series, lambda s: s.sm_p95),
        sm_max=max(s.sm_max for s in series),
        vram_p95_mib=max(p95s, default=None),
        vram_peak_mib=max(peaks, default=None),
        sm_demand_gpus=sum(s.hours * s.sm_p95 / 100 for s in series) / hours if hours else 0.0,
        latency_sensitive=latency_sensitive,
    )


def workloads(
    series: Iterable[GpuSeries],
    owner_of: Callable[[str], Owner],
    latency_sensitive: Mapping[str, bool] | None = None,
) -> list[WorkloadUsage]:
    """Group GPU series by the owner of their pod; ``latency_sensitive`` by pod key (any pod marks its owner)."""
    grouped: dict[Owner, list[GpuSeries]] = defaultdict(list)
    for s in series:
        if s.hours > 0:
            grouped[owner_of(s.pod)].append(s)
    marks = latency_sensitive or {}
    return [
        _usage(owner, tuple(group), any(marks.get(s.pod, False) for s in group))
        for owner, group in sorted(grouped.items())
    ]
