"""The paper's binning of a run into curves over X = 0..130 (% of cluster GPU capacity arrived).

Per pod event: arrive_ratio = round(arrived / C * 100) (integer %), alloc_ratio = round(used / C * 100, 2).
Column X = round(mean of alloc_ratio over events with arrive_ratio == X, 2); when no event has that
X, the mean over events with X-1..X+1. Python's `round` (half to even) throughout, as the analysis does.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from extender.advice.replay.engine import RunResult

MAX_X = 130


@dataclass(frozen=True, slots=True)
class Summary:
    """Mean and sample standard deviation over seeds."""

    mean: float
    sd: float


def _bin(result: RunResult, value: Callable[[int], float]) -> dict[int, list[float]]:
    bins: dict[int, list[float]] = {}
    capacity = result.capacity
    for event, arrived in enumerate(result.arrived):
        bins.setdefault(round(arrived / capacity * 100), []).append(value(event))
    return bins


def _curve(bins: dict[int, list[float]]) -> list[float | None]:
    out: list[float | None] = []
    for x in range(MAX_X + 1):
        values = bins.get(x)
        if not values:
            values = [v for near in (x - 1, x, x + 1) for v in bins.get(near, [])]
        # fsum: the published analysis sums accurately (pandas); a naive float sum can land a mean such
        # as 87.945 just above the half and round it the other way.
        out.append(round(math.fsum(values) / len(values), 2) if values else None)
    return out


def alloc_curve(result: RunResult) -> list[float | None]:
    """Allocated GPU % per X (None where neither X nor its neighbours saw an event)."""
    return _curve(_bin(result, lambda e: round(result.used[e] / result.capacity * 100, 2)))


def frag_curve(result: RunResult) -> list[float | None]:
    """Fragmented GPU as % of capacity ("frag/total") per X."""
    return _curve(_bin(result, lambda e: round(result.frag[e] / result.capacity * 100, 2)))


def frag_ratio_curve(result: RunResult) -> list[float | None]:
    """Fragmented GPU as % of the idle GPU ("frag rate") per X."""

    def ratio(event: int) -> float:
        idle = result.capacity - result.used[event]
        return round(result.frag[event] / idle * 100, 2) if idle > 0 else 0.0

    return _curve(_bin(result, ratio))


def summarise(values: Sequence[float]) -> Summary:
    """Mean +- sample sd (0 for a single value)."""
    return Summary(statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0)


def unallocated_at(curves: Sequence[Sequence[float | None]], x: int = 100) -> Summary:
    """Unallocated GPU % (100 - alloc) at X over seeds; seeds whose curve has no value there are skipped."""
    at_x = [curve[x] for curve in curves]
    values = [round(100.0 - v, 2) for v in at_x if v is not None]
    if not values:
        raise ValueError(f"no curve has a value at X={x}")
    return summarise(values)
