"""The paper's binning of a run into curves over X = 0..130 (% of cluster GPU capacity arrived).

Per pod event: arrive_ratio = round(arrived * 100 / C) (integer %), alloc_ratio = round(used * 100 / C, 2);
multiplying first keeps exact halves such as 101.5 % exact (arrived / C * 100 gives 101.49999999999999).
Column X = mean of alloc_ratio over events with arrive_ratio == X, to 2 decimals (`round_column`); when
no event has that X, the mean over events with X-1..X+1. Per-event ratios use Python's `round`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from extender.advice.replay.run_result import RunResult

MAX_X = 130


@dataclass(frozen=True, slots=True)
class Summary:
    """Mean and sample standard deviation over seeds."""

    mean: float
    sd: float


def round_column(mean: float) -> float:
    """A column value to two decimals as the published tables (numpy) do: rint(mean * 100) / 100.

    Half-to-even on the scaled float, unlike Python's `round(mean, 2)`: a mean of 63.945 (float
    63.94500000000000028) scales to 6394.5 and becomes 63.94 as published, where `round` gives 63.95.
    """
    return round(mean * 100) / 100


def pairwise_sum(values: Sequence[float]) -> float:
    """numpy's float sum (`pairwise_sum`): 8 interleaved accumulators up to 128 values, halves above.

    The published means were taken with numpy; exact-half means such as 1.845 land on either side of
    the half depending on the summation, so the same algorithm is needed to round like them.
    """
    n = len(values)
    if n < 8:
        total = 0.0
        for value in values:
            total += value
        return total
    if n <= 128:
        acc = list(values[:8])
        body = n - n % 8
        for start in range(8, body, 8):
            for k in range(8):
                acc[k] += values[start + k]
        total = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
        for value in values[body:]:
            total += value
        return total
    half = n // 2
    half -= half % 8
    return pairwise_sum(values[:half]) + pairwise_sum(values[half:])


def _bin(result: RunResult, value: Callable[[int], float]) -> dict[int, list[float]]:
    bins: dict[int, list[float]] = {}
    capacity = result.capacity
    for event, arrived in enumerate(result.arrived):
        bins.setdefault(round(arrived * 100 / capacity), []).append(value(event))
    return bins


def _curve(bins: dict[int, list[float]]) -> list[float | None]:
    out: list[float | None] = []
    for x in range(MAX_X + 1):
        values = bins.get(x)
        if not values:
            values = [v for near in (x - 1, x, x + 1) for v in bins.get(near, [])]
        out.append(round_column(pairwise_sum(values) / len(values)) if values else None)
    return out


def alloc_curve(result: RunResult) -> list[float | None]:
    """Allocated GPU % per X (None where neither X nor its neighbours saw an event)."""
    return _curve(_bin(result, lambda e: round(result.used[e] * 100 / result.capacity, 2)))


def frag_curve(result: RunResult) -> list[float | None]:
    """Fragmented GPU as % of capacity ("frag/total") per X."""
    return _curve(_bin(result, lambda e: round(result.frag[e] * 100 / result.capacity, 2)))


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
