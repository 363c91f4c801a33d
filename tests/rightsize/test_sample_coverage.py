"""Hours observed, scrape interval and first/last sample from per-bucket sample counts."""

from __future__ import annotations

import pytest

from extender.sources.sample_coverage import Coverage, bucket_seconds, coverage, interval_of, usual_interval

H = 3600.0


def _hours(counts: list[int], start: float = 0.0, bucket: float = H) -> list[tuple[float, float]]:
    """``(bucket end, samples)`` points, the first bucket ending at ``start + bucket``."""
    return [(start + (i + 1) * bucket, float(c)) for i, c in enumerate(counts)]


@pytest.mark.parametrize(
    ("window_s", "bucket_s"),
    [
        (600, 600),  # shorter than 15 min: one bucket
        (36 * H, 900),  # 144 buckets of 15 min
        (7 * 24 * H, H),  # 168 buckets of 1 h (15 min would be 672 > 200)
        (30 * 24 * H, 4 * H),  # 180 of 4 h
        (90 * 24 * H, 12 * H),  # 180 of 12 h
    ],
)
def test_the_bucket_is_the_smallest_giving_at_most_200_points(window_s: float, bucket_s: float) -> None:
    assert bucket_seconds(window_s) == bucket_s


def test_the_interval_comes_from_the_fullest_inner_bucket() -> None:
    # 1-minute scrapes: whole hours hold 60; the partial first and last buckets are not whole.
    assert interval_of(_hours([0, 17, 60, 60, 59, 3]), H) == 60  # 3600 ÷ 60
    assert interval_of(_hours([17, 3]), H) is None  # no inner bucket: too short to tell


def test_a_short_series_takes_the_interval_most_series_have() -> None:
    assert usual_interval([60.0, 60.0, 300.0, None]) == 60
    assert usual_interval([None]) is None


def test_a_regular_series_is_counted_exactly() -> None:
    # Samples every 60 s from 00:44 to 03:03, buckets (end − 1 h, end]: 17 + 60 + 60 + 3 = 140
    # samples = 140 min. The first sample's own minute begins at 01:00 − 17 × 60 s = 00:43;
    # the last sample is at 03:00 + 3 × 60 s = 03:03.
    got = coverage(_hours([17, 60, 60, 3]), H, 60.0)
    assert got == Coverage(samples=140, interval_s=60.0, first=H - 17 * 60, last=3 * H + 3 * 60)
    assert got is not None and got.hours == pytest.approx(140 / 60)


def test_a_gap_is_left_out_of_the_hours() -> None:
    # 60 + 0 + 60 samples at 60 s: 2 h observed over a 3 h span.
    got = coverage(_hours([60, 0, 60]), H, 60.0)
    assert got is not None and got.hours == 2 and (got.first, got.last) == (0, 3 * H)


def test_without_any_interval_a_short_series_spans_its_buckets_evenly() -> None:
    got = coverage(_hours([4, 2]), H, None)  # 3600 ÷ 4 = 900 s each: 6 samples = 1.5 h
    assert got is not None and (got.interval_s, got.hours) == (900, 1.5)
    assert coverage(_hours([0, 0]), H, 60.0) is None
