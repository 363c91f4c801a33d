"""How long a series was observed, from its sample counts per time bucket.

Prometheus 2's only exact handle on a sample's time, ``timestamp()``, is slow inside a subquery (it
re-reads every series at every step: 14 s for 2,000 week-long series, even at hourly steps), so the
history reports ask instead for ``count_over_time(F[B])`` at every bucket end (one range query, read
in one pass) and count here:

- the scrape interval: B ÷ the most samples in a bucket that is not the series' first or last (a whole
  bucket holds B ÷ interval samples); a series too short for a whole bucket takes the interval most of
  the others have (one exporter, one scrape config);
- hours observed: samples × interval (n samples cover n intervals, gaps left out);
- where the observation starts: the first filled bucket's end − its samples × interval (the first
  sample's own interval begins there); the last sample: the last filled bucket's start + its samples ×
  interval (buckets hold (end − B, end]; exact for regular scrapes, within one interval otherwise).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Coverage", "bucket_seconds", "coverage", "interval_of", "usual_interval"]

_BUCKETS_S = (900, 3600, 14400, 43200, 86400)
_MOST_BUCKETS = 200  # points per series in the range query: a few MB of JSON for 2,000 series


def bucket_seconds(window_s: float) -> float:
    """The bucket width for a window: the smallest of 15 min, 1 h, 4 h, 12 h, 1 d giving ≤ 200 buckets."""
    if window_s <= _BUCKETS_S[0]:
        return window_s
    return next((b for b in _BUCKETS_S if window_s / b <= _MOST_BUCKETS), _BUCKETS_S[-1])


@dataclass(frozen=True)
class Coverage:
    samples: int
    interval_s: float
    first: float  # unix seconds: where the first sample's interval begins, and the last sample
    last: float

    @property
    def hours(self) -> float:
        return self.samples * self.interval_s / 3600


def _filled(points: Iterable[tuple[float, float]]) -> list[tuple[float, int]]:
    return [(t, round(c)) for t, c in points if c > 0]


def interval_of(points: Sequence[tuple[float, float]], bucket_s: float) -> float | None:
    """The scrape interval from the fullest whole bucket (not the first or last filled one), or None."""
    filled = _filled(points)
    inner = [c for _, c in filled[1:-1]]
    return bucket_s / max(inner) if inner else None


def usual_interval(intervals: Iterable[float | None]) -> float | None:
    """The interval most series have (to the millisecond), for those too short to show their own."""
    counted = Counter(round(i, 3) for i in intervals if i)
    return counted.most_common(1)[0][0] if counted else None


def coverage(points: Sequence[tuple[float, float]], bucket_s: float, interval_s: float | None) -> Coverage | None:
    """A series' samples, interval, first and last sample from its ``(bucket end, samples)`` points."""
    filled = _filled(points)
    if not filled:
        return None
    samples = sum(c for _, c in filled)
    # Without a known interval, a short series is taken to span its buckets evenly.
    interval = interval_s or bucket_s / max(c for _, c in filled)
    (first_end, first_count), (last_end, last_count) = filled[0], filled[-1]
    first = first_end - first_count * interval
    last = last_end - bucket_s + last_count * interval
    return Coverage(samples, interval, max(first, first_end - bucket_s), max(last, first))
