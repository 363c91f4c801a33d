"""A Running series read at the window's steps: which buckets count whole, which must be counted."""

from __future__ import annotations

import pytest

from extender.sources.running_hours import Stretch, _steps, stretch

T = 1_800_000_000  # a step; steps every 900 s
STEPS = [T, T + 900, T + 1800, T + 2700]


def _read(*running: int) -> list[tuple[float, float]]:
    """The step read: at each step 1 where the last sample of the scrape interval before it is Running."""
    return list(zip(STEPS, map(float, running), strict=True))


@pytest.mark.parametrize(
    ("read", "start", "expected"),
    [
        # Running at all 4 steps: 3 whole buckets, 3 × 900 s, nothing to count.
        (_read(1, 1, 1, 1), T, Stretch(2700, ())),
        # Pending at the first two steps: (T+900, T+1800] holds the start (counted), the last bucket is whole.
        (_read(0, 0, 1, 1), T, Stretch(900, ((T + 1800, 900),))),
        # Gone before the last step (no sample in the scrape interval before it): 2 whole buckets, the
        # last one counted.
        (_read(1, 1, 1, 0), T, Stretch(1800, ((T + 2700, 900),))),
        # Unknown at the second step: both buckets around it counted, the last one whole.
        (_read(1, 0, 1, 1), T, Stretch(900, ((T + 900, 900), (T + 1800, 900)))),
        # The window starts 300 s after the first step: its first bucket is 600 s: 600 + 900 + 900.
        (_read(1, 1, 1, 1), T + 300, Stretch(2400, ())),
        # The same, starting inside that bucket: 600 s of it counted, then 2 whole buckets.
        (_read(0, 1, 1, 1), T + 300, Stretch(1800, ((T + 900, 600),))),
    ],
)
def test_buckets_running_at_both_ends_count_whole_and_the_others_are_counted(
    read: list[tuple[float, float]], start: float, expected: Stretch
) -> None:
    assert stretch(read, STEPS, start) == expected


def test_a_series_running_at_no_step_is_counted_over_the_whole_window() -> None:
    # Pending at T + 900, Succeeded at T + 1800, Running only between: no step tells how long.
    assert stretch(_read(0, 0, 0, 0), STEPS, T) is None


def test_steps_go_back_from_the_end_to_at_or_before_the_start() -> None:
    # 2,700 s in 900-s steps: 3 buckets, 4 steps; 2,500 s: still 3 buckets, the first one from 200 s before the start.
    assert _steps(T + 2700, 2700, 900) == STEPS
    assert _steps(T + 2700, 2500, 900) == STEPS
