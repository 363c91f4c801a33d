"""Go's ``math/rand`` stream, so a replay draws the very arrival orders the paper's simulator drew.

The simulator seeds Go's ``math/rand`` once per run and draws the arrival order, the tuning copies and
the node ranks from it. With the same stream, every one of the 17 published traces replays on the
paper's own orders and compares seed by seed, not only in the 10-seed mean (the shipped ``fgd-order``
files cover four traces; this reproduces them, which the tests pin).

The source is an additive lagged Fibonacci generator, y(t) = y(t−607) + y(t−273) mod 2⁶⁴, whose
607-word register is seeded by xor-ing a Lehmer (48271, 2³¹−1) stream into a fixed "cooked"
register: Go's table of the register of the same generator, seeded with 1, after 7.8·10¹² steps.
Rather than carry that table, it is worked out here: the recurrence is linear, so the state after N
steps is x^N mod (x⁶⁰⁷ − x³³⁴ − 1) applied to the first one (about 45 products of polynomials of
degree 606, a fraction of a second with numpy; uint64 arithmetic wraps mod 2⁶⁴ exactly as Go's does).
The methods follow Go's ``Rand`` value stream exactly: ``Intn`` by rejection over 31 bits,
``Shuffle`` by Lemire's multiply-shift, ``Perm`` by its inside-out swap, ``Float64`` by division.
"""

from __future__ import annotations

from collections.abc import MutableSequence
from functools import cache
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np

__all__ = ["GoRandom"]

_LEN, _TAP = 607, 273
_FEED = _LEN - _TAP  # where the feed index starts: y(t) is written at (334 − t) mod 607
_M31 = (1 << 31) - 1
_MASK64 = (1 << 64) - 1
_MASK63 = (1 << 63) - 1
_COOKING_STEPS = 7_800_000_000_000  # Go's table is its register after this many steps from seed 1
_T = TypeVar("_T")


def _lehmer(x: int) -> int:
    """x · 48271 mod (2³¹ − 1), by Schrage's method as Go writes it (same values)."""
    hi, lo = divmod(x, 44488)
    x = 48271 * lo - 3399 * hi
    return x + _M31 if x < 0 else x


def _seeded(seed: int, shifts: tuple[int, int]) -> list[int]:
    """The register words a seed xors in: three Lehmer draws per word, after 20 skipped."""
    seed %= _M31
    x = seed or 89482311
    words = []
    for i in range(-20, _LEN):
        x = _lehmer(x)
        if i >= 0:
            u = x << shifts[0]
            x = _lehmer(x)
            u ^= x << shifts[1]
            x = _lehmer(x)
            words.append(u ^ x)
    return words


def _times(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a · b mod (x⁶⁰⁷ − x³³⁴ − 1), coefficients mod 2⁶⁴: x^k for k ≥ 607 is x^(k−273) + x^(k−607)."""
    import numpy as np

    c = [int(v) for v in np.convolve(a, b)]
    for k in range(len(c) - 1, _LEN - 1, -1):
        if c[k]:
            c[k - _TAP] = (c[k - _TAP] + c[k]) & _MASK64
            c[k - _LEN] = (c[k - _LEN] + c[k]) & _MASK64
    return np.array(c[:_LEN], dtype=np.uint64)


def _x_to_the(n: int) -> np.ndarray:
    import numpy as np

    result, base = np.zeros(_LEN, dtype=np.uint64), np.zeros(_LEN, dtype=np.uint64)
    result[0], base[1] = 1, 1
    while n:
        if n & 1:
            result = _times(result, base)
        base = _times(base, base)
        n >>= 1
    return result


@cache
def cooked() -> tuple[int, ...]:
    """Go's cooked register: the generator seeded with 1 (words of 20/10-bit shifts), 7.8·10¹² steps on.

    The sequence's first 607 values y(−606) … y(0) are the seeded register read from position 334
    backwards; y(t) = Σ_j c_j · y(j − 606) where c = x^(t+606) mod the characteristic polynomial. The
    register after N steps holds y(N−606) … y(N), y(t) at position (334 − t) mod 607."""
    # numpy only here, imported when first asked: the served process never replays (15 MiB resident)
    import numpy as np

    register = _seeded(1, (20, 10))
    first = np.array([register[(_FEED - t) % _LEN] for t in range(-606, 1)], dtype=np.uint64)
    coefficients = _x_to_the(_COOKING_STEPS)  # y(N − 606) = coefficients · first
    out = [0] * _LEN
    for t in range(_COOKING_STEPS - 606, _COOKING_STEPS + 1):
        out[(_FEED - t) % _LEN] = int(np.dot(coefficients, first))
        top = int(coefficients[-1])  # times x: shift up, the x⁶⁰⁷ term folds into x³³⁴ and 1
        coefficients = np.roll(coefficients, 1)
        coefficients[0] = top
        coefficients[_FEED] = (int(coefficients[_FEED]) + top) & _MASK64
    return tuple(out)


class GoRandom:
    """``rand.New(rand.NewSource(seed))``: the methods the simulator calls, value for value."""

    def __init__(self, seed: int) -> None:
        words = _seeded(seed, (40, 20))
        self._vec = [(w ^ c) & _MASK64 for w, c in zip(words, cooked(), strict=True)]
        self._tap, self._feed = 0, _FEED

    def uint64(self) -> int:
        self._tap = (self._tap - 1) % _LEN
        self._feed = (self._feed - 1) % _LEN
        x = (self._vec[self._feed] + self._vec[self._tap]) & _MASK64
        self._vec[self._feed] = x
        return x

    def int63(self) -> int:
        """``Int63`` (and ``Int`` on 64-bit machines)."""
        return self.uint64() & _MASK63

    def _uint32(self) -> int:
        return self.int63() >> 31

    def intn(self, n: int) -> int:
        """``Intn`` for n < 2³¹: ``Int31n``, rejection sampling over ``Int31``."""
        if n <= 0 or n > _M31:
            raise ValueError(f"intn needs 0 < n < 2^31, got {n}")
        if n & (n - 1) == 0:
            return (self.int63() >> 32) & (n - 1)
        top = _M31 - (1 << 31) % n
        v = self.int63() >> 32
        while v > top:
            v = self.int63() >> 32
        return v % n

    def _int31n(self, n: int) -> int:
        """The unexported ``int31n`` ``Shuffle`` uses: Lemire's multiply-shift with rejection."""
        product = self._uint32() * n
        if product & 0xFFFFFFFF < n:
            threshold = ((1 << 32) - n) % n
            while product & 0xFFFFFFFF < threshold:
                product = self._uint32() * n
        return product >> 32

    def float64(self) -> float:
        while True:
            f = self.int63() / (1 << 63)
            if f != 1.0:
                return f

    def perm(self, n: int) -> list[int]:
        out = [0] * n
        for i in range(n):
            j = self.intn(i + 1)
            out[i] = out[j]
            out[j] = i
        return out

    def shuffle(self, items: MutableSequence[_T]) -> None:
        """``Shuffle`` in place (lists shorter than 2³¹, so only the ``int31n`` loop)."""
        for i in range(len(items) - 1, 0, -1):
            j = self._int31n(i + 1)
            items[i], items[j] = items[j], items[i]
