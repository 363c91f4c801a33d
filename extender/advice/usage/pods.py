"""One pod's GPU allocation over a window, and how much of it DCGM saw used.

- allocated GPU-hours: Σ asks' GPU-equivalents × the hours the pod was Running (a pending or finished
  pod holds nothing);
- used GPU-hours: Σ over the DCGM series attributed to the pod of its hours × mean SM activity × the
  GPU-equivalents of one of the pod's devices (a MIG instance's activity is of its own slices; a shared
  GPU's activity is split evenly among its shares), at most what it was allocated; None when no series
  names the pod (unmetered, not idle);
- idle GPU-hours: allocated − used, for metered pods only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from extender.advice.rightsize import GpuSeries, Owner
from extender.advice.usage.asks import GpuAsk

__all__ = ["DeviceUse", "PodUsage", "with_dcgm_use"]


@dataclass(frozen=True)
class DeviceUse:
    """One DCGM series of a pod's device over the window: its busy hours (Σ samples × scrape interval
    × SM activity), the VRAM peak if read, and the product it names."""

    pod: str  # "namespace/name"
    busy_hours: float
    vram_peak_mib: float | None = None
    product: str | None = None


def _device_use(s: GpuSeries | DeviceUse) -> DeviceUse:
    if isinstance(s, DeviceUse):
        return s
    return DeviceUse(s.pod, s.hours * s.sm_mean / 100, s.vram_peak_mib, s.product)


@dataclass(frozen=True)
class PodUsage:
    namespace: str
    name: str
    owner: Owner
    asks: tuple[GpuAsk, ...]
    running_hours: float
    product: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    used_gpu_hours: float | None = None
    vram_peak_mib: float | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def gpus(self) -> float:
        return sum(a.gpus for a in self.asks)

    @property
    def allocated_gpu_hours(self) -> float:
        return self.gpus * self.running_hours

    @property
    def idle_gpu_hours(self) -> float | None:
        return None if self.used_gpu_hours is None else self.allocated_gpu_hours - self.used_gpu_hours

    def device_share(self) -> float:
        """GPU-equivalents of one of its devices (the mean, if it mixes kinds)."""
        devices = sum(a.count for a in self.asks)
        return self.gpus / devices if devices else 0.0


def with_dcgm_use(pods: Iterable[PodUsage], series: Iterable[GpuSeries | DeviceUse]) -> list[PodUsage]:
    """The pods with their used GPU-hours and VRAM peak from the DCGM series naming them."""
    by_pod: dict[str, list[DeviceUse]] = {}
    for s in map(_device_use, series):
        by_pod.setdefault(s.pod, []).append(s)
    out = []
    for pod in pods:
        mine = by_pod.get(pod.key)
        if not mine:
            out.append(pod)
            continue
        used = sum(s.busy_hours for s in mine) * pod.device_share()
        peaks = [s.vram_peak_mib for s in mine if s.vram_peak_mib is not None]
        product = pod.product or next((s.product for s in mine if s.product), None)
        out.append(
            replace(
                pod,
                used_gpu_hours=min(used, pod.allocated_gpu_hours),
                vram_peak_mib=max(peaks, default=None),
                product=product,
            )
        )
    return out
