"""What telemetry says about each GPU: the latest reading per (node, GPU), each with its sample time.

Readings are fetched in the background (``extender.sources``) and never inside a request; a reading
older than ``max_age_s`` counts as unknown ("telemetry stale (93 s)").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from extender.model.topology import Gpu

__all__ = ["GpuReading", "TelemetryBoard"]


@dataclass(frozen=True)
class GpuReading:
    sm_util: float | None = None  # percent busy
    memory_used_mib: float | None = None
    memory_free_mib: float | None = None
    at: float | None = None  # sample time (epoch s); None for static values that never age
    pod: str | None = None  # "namespace/name" holding the GPU, as DCGM exporter's pod labels say
    sm_history: tuple[float, ...] = ()  # recent SM utilization samples, oldest first (diagnose)

    @property
    def memory_total_mib(self) -> float | None:
        if self.memory_used_mib is None or self.memory_free_mib is None:
            return None
        return self.memory_used_mib + self.memory_free_mib


class TelemetryBoard:
    """The latest reading per (node, GPU); swapped whole on each refresh."""

    def __init__(self, max_age_s: float = 60.0) -> None:
        self.max_age_s = max_age_s
        self._readings: dict[tuple[str, str], GpuReading] = {}
        self.refreshed_at: float | None = None
        self.last_error: str | None = None

    def replace(self, readings: Mapping[tuple[str, str], GpuReading], at: float) -> None:
        self._readings = dict(readings)
        self.refreshed_at = at
        self.last_error = None

    def put(self, key: tuple[str, str], reading: GpuReading) -> None:
        self._readings = {**self._readings, key: reading}

    def reading(self, node: str, gpu: Gpu) -> GpuReading | None:
        readings = self._readings
        if gpu.uuid:
            found = readings.get((node, gpu.uuid))
            if found is not None:
                return found
        return readings.get((node, f"#{gpu.index}"))

    def age(self, reading: GpuReading, now: float) -> float | None:
        return None if reading.at is None else max(0.0, now - reading.at)

    def is_stale(self, reading: GpuReading, now: float) -> bool:
        age = self.age(reading, now)
        return age is not None and age > self.max_age_s

    def of_pod(self, key: str) -> list[tuple[str, GpuReading]]:
        """Readings attributed to a pod ("namespace/name"), as ("node GPU i", reading), one per GPU."""
        return sorted(
            (f"{node} GPU {gpu[1:]}", r)
            for (node, gpu), r in self._readings.items()
            if gpu.startswith("#") and r.pod == key
        )

    def node_age(self, node: str, now: float) -> float | None:
        ages = [now - r.at for (n, _), r in self._readings.items() if n == node and r.at is not None]
        return min(ages) if ages else None

    def __len__(self) -> int:
        return len(self._readings)
