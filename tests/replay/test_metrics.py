"""Binning a run into the published X = 0..130 columns."""

from __future__ import annotations

from extender.advice.replay.metrics import alloc_curve, frag_ratio_curve, pairwise_sum, round_column, unallocated_at
from extender.advice.replay.run_result import RunResult


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


def test_arrival_percent_multiplies_before_dividing_so_exact_halves_stay_exact() -> None:
    # 6305180 * 100 / 6212000 = 101.5 exactly -> half to even -> 102 (6305180 / 6212000 * 100 = 101.49999999999999)
    curve = alloc_curve(_run([6_305_180], [5_000_000], capacity=6_212_000))
    assert curve[102] == 80.49 and curve[101] == 80.49  # 101 has no event: the neighbour 102 fills it
    assert alloc_curve(_run([6_305_180], [5_000_000], capacity=6_212_000))[100] is None


def test_means_sum_like_numpy_so_exact_halves_round_as_published() -> None:
    values = [1.58, 1.91, 1.5, 1.28, 1.76, 1.62, 1.25, 1.91, 1.98]
    # 8 accumulators seeded with the first 8 values, combined as a tree, then the 9th added
    tree = ((1.58 + 1.91) + (1.5 + 1.28)) + ((1.76 + 1.62) + (1.25 + 1.91)) + 1.98
    assert pairwise_sum(values) == tree == 14.790000000000001
    assert sum(values) == 14.790000000000003  # a left-to-right sum differs in the last bits
    # below 8 values numpy sums left to right
    assert pairwise_sum([0.1, 0.2, 0.3]) == (0.1 + 0.2) + 0.3
    # 16 values: 8 accumulators, each adding its pair, then combined as a tree
    sixteen = [float(i) for i in range(16)]
    assert pairwise_sum(sixteen) == 120.0
