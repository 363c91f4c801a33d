"""Binning a run into the published X = 0..130 columns."""

from __future__ import annotations

from extender.advice.replay.engine import RunResult
from extender.advice.replay.metrics import alloc_curve, frag_ratio_curve, round_column, unallocated_at


def _run(arrived: list[int], used: list[int], capacity: int = 100_000) -> RunResult:
    return RunResult("t", 1, capacity, tuple(arrived), tuple(used), tuple(0.0 for _ in used), tuple(0 for _ in used))


def test_columns_average_the_events_of_each_integer_arrival_percent() -> None:
    # arrived 1000/100000 = 1 % twice (alloc 1.0 and 0.5), 3 % once (alloc 2.0): X=1 -> 0.75, X=3 -> 2.0
    curve = alloc_curve(_run([1000, 1000, 3000], [1000, 500, 2000]))
    assert curve[1] == 0.75
    assert curve[3] == 2.0


def test_an_empty_column_takes_the_mean_over_its_neighbours() -> None:
    curve = alloc_curve(_run([1000, 1000, 3000], [1000, 500, 2000]))
    # X=2 saw no event: mean of X=1..3 events = (1.0 + 0.5 + 2.0) / 3 = 1.1666.. -> 1.17
    assert curve[2] == 1.17
    # X=0 has only X=1 as a neighbour with events: (1.0 + 0.5) / 2 = 0.75; X=5 has none at all
    assert (curve[0], curve[5]) == (0.75, None)


def test_column_rounding_is_half_to_even_on_the_scaled_mean_as_published() -> None:
    assert round_column(63.945) == 63.94  # Python's round(63.945, 2) gives 63.95
    assert round_column(63.955) == 63.96
    assert round_column(87.944999999999993) == 87.94


def test_unallocated_is_100_minus_alloc_with_mean_and_sample_sd_over_seeds() -> None:
    summary = unallocated_at([[None] * 100 + [95.0], [None] * 100 + [93.0]], 100)
    assert (summary.mean, round(summary.sd, 6)) == (6.0, round(2**0.5, 6))


def test_frag_ratio_is_frag_over_idle_gpu() -> None:
    run = RunResult("t", 1, 1000, (500,), (500,), (100.0,), (0,))
    assert frag_ratio_curve(run)[50] == 20.0  # 100 / (1000 - 500) * 100
