"""How long to wait before retrying a source that failed: exponential backoff with full jitter.

The n-th retry in a row waits a uniform random time in [0, min(cap, base × 2ⁿ)]. Without jitter
every replica (and every watch in it) retries an API server that just came back in lock step; with
the full range they spread out, and the cap keeps a long outage from stretching the wait past what
an operator would call "still trying".
"""

from __future__ import annotations

import random

__all__ = ["Backoff"]


class Backoff:
    def __init__(self, base_s: float, cap_s: float, rng: random.Random | None = None) -> None:
        if base_s <= 0 or cap_s < base_s:
            raise ValueError(f"backoff needs 0 < base ≤ cap, got base {base_s}, cap {cap_s}")
        self.base_s, self.cap_s = base_s, cap_s
        self.rng = rng or random.Random()
        self.failures = 0

    def ceiling(self) -> float:
        """The longest the next wait can be."""
        # Capped before exponentiating too far: 2 ** 10_000 is an overflow, not a wait.
        return float(min(self.cap_s, self.base_s * 2 ** min(self.failures, 64)))

    def next_wait(self) -> float:
        """Seconds to wait after one more failure in a row."""
        wait = self.rng.uniform(0.0, self.ceiling())
        self.failures += 1
        return wait

    def reset(self) -> None:
        """The source answered: the next failure starts from the base again."""
        self.failures = 0
