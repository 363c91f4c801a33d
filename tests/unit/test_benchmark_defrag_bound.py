"""``benchmarks/defrag_bound.py`` packs shares over every way they fill one GPU: the fills must be all of
them (a missing one would raise the floor it prints) and none that overflows 1,000 milli."""

from __future__ import annotations

import pytest

from benchmarks.defrag_bound import fills


@pytest.mark.parametrize(
    ("most", "expected"),
    [
        # 810, 470, 160 milli: 810+160 = 970 fits, 810+160+160 = 1130 does not; 470+470 = 940 fits,
        # 470+470+160 = 1100 does not; 470+160+160 = 790 fits
        ((2, 3, 2), {(1, 0, 0), (1, 0, 1), (0, 2, 0), (0, 1, 0), (0, 1, 1), (0, 1, 2), (0, 0, 1), (0, 0, 2)}),
        # only one of each arrived: no 470+470, no 160+160
        ((1, 1, 1), {(1, 0, 0), (1, 0, 1), (0, 1, 0), (0, 1, 1), (0, 0, 1)}),
    ],
)
def test_every_fill_of_one_gpu_and_no_more(most: tuple[int, int, int], expected: set[tuple[int, ...]]) -> None:
    found = fills([810, 470, 160], most)
    assert set(found) == expected
    assert len(found) == len(expected)  # each once


def test_ten_fifty_milli_shares_fill_half_a_gpu_at_most_ten_ways() -> None:
    assert sorted(fills([50], [10])) == [(n,) for n in range(1, 11)]  # 1 to 10 shares: 50 to 500 milli
