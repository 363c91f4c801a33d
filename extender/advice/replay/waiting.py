"""Pods that every node fitting them held (the advisor's reserve): they wait, in the trace's time.

In a cluster such a pod stays Pending and kube-scheduler tries it again whenever the cluster changes;
it binds as soon as some node no longer holds it, and once it has been held for the policy's
``reserve_hold_limit_s`` (counted from when it was first held) it is placed as if no reserve existed.
The replay does the same: a held pod is tried again after every later arrival, and comes back at its
limit whatever the reserve says.

The openb replay has no clock: the simulator's protocol leaves the trace's times out, shuffles the
pods and adds copies up to 1.3 × the cluster. So time is arrivals at a steady pace, arrival ``i`` at
``i × interval`` seconds. The default pace is the trace's own: the default trace's pods were created
over 149 days, 7,355 of its 8,152 in the last 30 of them, one every 352 s on average.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from extender.advice.replay.specs import PodShape

__all__ = ["ARRIVAL_INTERVAL_S", "Held", "HeldPods", "WaitSummary", "summarise_waits"]

ARRIVAL_INTERVAL_S = 352.0


@dataclass(frozen=True, slots=True)
class Held:
    """A pod waiting because every node it fits held it."""

    index: int  # its place in the arrival order
    shape: PodShape
    since: float  # seconds: when it was first held


class HeldPods:
    """The waiting pods, oldest hold first, and how long each one that left had waited."""

    def __init__(self, limit_s: float) -> None:
        if not limit_s > 0:
            raise ValueError(f"a hold limit must be above 0 seconds, not {limit_s}")
        self.limit_s = limit_s
        self._held: list[Held] = []
        self.waits: list[float] = []

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, index: int, shape: PodShape, now: float) -> None:
        """The pod arriving at ``now`` found every node it fits holding it."""
        self._held.append(Held(index, shape, now))

    def due(self, now: float) -> list[Held]:
        """The pods whose limit has passed by ``now`` (all of them for ``math.inf``), oldest first,
        taken out of the wait; each waited exactly the limit."""
        out = [h for h in self._held if h.since + self.limit_s <= now]
        if out:
            self._held = [h for h in self._held if h.since + self.limit_s > now]
            self.waits += [self.limit_s] * len(out)
        return out

    def waiting_since_before(self, now: float) -> list[Held]:
        """The pods held before ``now``, oldest first (still waiting until ``left`` says otherwise)."""
        return [h for h in self._held if h.since < now]

    def left(self, held: Held, now: float) -> None:
        """``held`` was placed at ``now``, before its limit."""
        self._held.remove(held)
        self.waits.append(now - held.since)


@dataclass(frozen=True, slots=True)
class WaitSummary:
    """Over runs: held pods per run, and the wait of every held pod (seconds)."""

    held_per_run: float
    mean_s: float
    p95_s: float
    max_s: float


def _p95(values: Sequence[float]) -> float:
    """Nearest rank: the smallest value at or above 95 % of them."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def summarise_waits(runs: Sequence[Sequence[float]]) -> WaitSummary:
    """Every run's waits pooled (all zero when no pod was held)."""
    pooled = [w for waits in runs for w in waits]
    per_run = len(pooled) / len(runs) if runs else 0.0
    if not pooled:
        return WaitSummary(per_run, 0.0, 0.0, 0.0)
    return WaitSummary(per_run, sum(pooled) / len(pooled), _p95(pooled), max(pooled))
