"""What telemetry says about each GPU: the latest reading per (node, GPU), each with its sample time.

Readings are fetched in the background (``extender.sources``) and never inside a request. A reading
older than ``max_age_s``, or whose series ended (its exporter stopped answering), counts as unknown:
"telemetry stale (93 s)". A GPU whose series fell out of the source's lookback altogether is
remembered as "no telemetry since …".
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from extender.model.topology import Gpu

if TYPE_CHECKING:
    from extender.model.series_census import SeriesCensus

__all__ = ["GpuReading", "TelemetryBoard"]


log = logging.getLogger(__name__)


# slots: a fleet's board holds one per GPU (40,000 at 5,000 nodes), and each refresh makes as many anew;
# with a __dict__ each was twice the size.
@dataclass(frozen=True, slots=True)
class GpuReading:
    sm_util: float | None = None  # percent of time the SMs are busy (see sm_source)
    memory_used_mib: float | None = None  # used + reserved
    memory_free_mib: float | None = None
    at: float | None = None  # sample time (epoch s); None for static values that never age
    pod: str | None = None  # "namespace/name" holding the GPU, as DCGM exporter's pod labels say
    sm_history: tuple[float, ...] = ()  # recent SM utilization samples, oldest first (diagnose)
    sm_source: str | None = None  # the DCGM field sm_util came from, e.g. DCGM_FI_PROF_SM_ACTIVE
    ended: bool = False  # the series stopped (exporter gone): the last value, aging
    mig: str | None = None  # MIG instance profile, for a reading of one instance

    @property
    def memory_total_mib(self) -> float | None:
        if self.memory_used_mib is None or self.memory_free_mib is None:
            return None
        return self.memory_used_mib + self.memory_free_mib


class TelemetryBoard:
    """The latest reading per (node, GPU); swapped whole on each refresh, with how the source fares."""

    def __init__(self, max_age_s: float = 60.0, source: str = "static") -> None:
        self.max_age_s = max_age_s
        self.source = source
        self._readings: dict[tuple[str, str], GpuReading] = {}
        self._gone: dict[tuple[str, str], float] = {}  # GPUs whose series left the lookback → last sample
        self.refreshed_at: float | None = None
        self.last_error: str | None = None
        self.poll_errors = 0
        self.census: SeriesCensus | None = None
        self.rejected: dict[str, int] = {}  # series rejected for values no GPU can have, by reason, ever
        self.misattributed = 0  # agent series whose self-reported node was not the node the agent runs on
        self._listeners: list[Callable[[], None]] = []

    def subscribe(self, listener: Callable[[], None]) -> None:
        """``listener()`` after each :meth:`replace`, on the refreshing thread."""
        self._listeners.append(listener)

    @property
    def up(self) -> bool | None:
        """Did the last poll work? None before the first."""
        if self.refreshed_at is None and self.last_error is None:
            return None
        return self.last_error is None

    def replace(
        self,
        readings: Mapping[tuple[str, str], GpuReading],
        at: float,
        census: SeriesCensus | None = None,
        rejected: Mapping[str, int] | None = None,
    ) -> None:
        fresh = dict(readings)
        gone = {k: t for k, t in self._gone.items() if k not in fresh}
        for key, old in self._readings.items():
            if key not in fresh and old.at is not None:
                gone[key] = old.at
        self._readings, self._gone = fresh, gone
        self.refreshed_at = at
        self.last_error = None
        self.census = census
        for reason, count in (rejected or {}).items():
            self.rejected[reason] = self.rejected.get(reason, 0) + count
        for listener in self._listeners:
            try:
                listener()
            except Exception:  # a follower's failure must not lose the readings just installed
                log.exception("following a telemetry refresh failed; requests follow it instead")

    def failed(self, error: str) -> None:
        """A poll failed: keep the readings (they age) and say why."""
        self.last_error = error
        self.poll_errors += 1

    def put(self, key: tuple[str, str], reading: GpuReading) -> None:
        self._readings = {**self._readings, key: reading}

    def reading(self, node: str, gpu: Gpu) -> GpuReading | None:
        readings = self._readings
        if gpu.uuid:
            found = readings.get((node, gpu.uuid))
            if found is not None:
                return found
        return readings.get((node, f"#{gpu.index}"))

    def last_seen(self, node: str, gpu: Gpu) -> float | None:
        """The last sample time of a GPU with no reading any more (None: never seen, or still read)."""
        found = self._gone.get((node, gpu.uuid)) if gpu.uuid else None
        return found if found is not None else self._gone.get((node, f"#{gpu.index}"))

    def age(self, reading: GpuReading, now: float) -> float | None:
        return None if reading.at is None else max(0.0, now - reading.at)

    def is_stale(self, reading: GpuReading, now: float) -> bool:
        age = self.age(reading, now)
        return reading.ended or (age is not None and age > self.max_age_s)

    def of_node(self, node: str) -> list[tuple[str, GpuReading]]:
        """A node's readings by index key ("#3", MIG instances "#3:mig1"), in GPU order."""
        found = [(gpu, r) for (n, gpu), r in self._readings.items() if n == node and gpu.startswith("#")]
        return sorted(found, key=lambda item: (int(item[0][1:].partition(":")[0]), item[0]))

    def of_pod(self, key: str) -> list[tuple[str, GpuReading]]:
        """Readings attributed to a pod ("namespace/name"), as ("node GPU i", reading), one per GPU."""
        return sorted(
            (f"{node} GPU {gpu[1:].replace(':mig', ' MIG ')}", r)
            for (node, gpu), r in self._readings.items()
            if gpu.startswith("#") and r.pod == key
        )

    def node_age(self, node: str, now: float) -> float | None:
        ages = [now - r.at for (n, _), r in self._readings.items() if n == node and r.at is not None]
        return min(ages) if ages else None

    def nodes(self) -> set[str]:
        return {n for n, _ in self._readings}

    def readings(self) -> Mapping[tuple[str, str], GpuReading]:
        """Every reading on the board now, by (node, GPU key): read only (the board swaps its readings
        whole on each refresh and never changes them in place)."""
        return self._readings

    def __len__(self) -> int:
        return len(self._readings)
