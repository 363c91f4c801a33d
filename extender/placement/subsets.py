"""Boards of 9 to 16 GPUs: every mask's answer in a table, built by a small compiled kernel.

A 16-GPU board has 65,536 free sets; the exact searches (``best_sets.py``, NVIDIA's partition DP in
``best_effort.py``) cost milliseconds to seconds per new free set in Python. The kernel (``_kernel.c``,
built by pip when a C compiler is present) computes per machine type, in C: every mask's set score,
and on first use of a size k every mask's best k-set score and NVIDIA's best partition total. A query
is then a walk over those tables in C: microseconds.

Without the kernel (no compiler at install time) :func:`subset_tables` is None and the searches
answer; the tests hold the two to the same answer on every policy and size.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

from extender.placement.matrix import Matrix

try:
    from extender.placement import _kernel
except ImportError:  # installed without a C compiler: the pure-Python searches answer
    _kernel = None  # type: ignore[assignment]

__all__ = ["KERNEL_BUILT", "SUBSET_LIMIT", "SubsetTables", "subset_tables"]

KERNEL_BUILT = _kernel is not None
SUBSET_LIMIT = 16
_INT_MAX = 2**31 - 1  # the tables hold C ints


class SubsetTables:
    """One wiring's tables, by position mask; per-size tables are built on first use (~1-20 ms each in
    C at 16 GPUs, 256 KiB each)."""

    def __init__(self, m: Matrix) -> None:
        self.n = n = len(m.indices)
        weights = array("i", [value for row in m.w for value in row])
        self._scores = _kernel.scores(weights, n)
        self.score = memoryview(self._scores).cast("i")
        self._adjacency = array("i", m.nvlink_adj)
        self._best: dict[int, bytes] = {}
        self._best_views: dict[int, memoryview] = {}
        self._totals: dict[int, bytes] = {}

    def prepare(self, sizes: Iterable[int]) -> None:
        """Build the best-set tables of these sizes now (what every answer's leaves look up)."""
        for k in sizes:
            if 2 <= k <= self.n:
                self._best_table(k)

    def best_score(self, mask: int, k: int) -> int:
        """The best score of a k-subset of ``mask`` (2 ≤ k ≤ the mask's count)."""
        view = self._best_views.get(k)
        if view is None:
            view = self._best_views[k] = memoryview(self._best_table(k)).cast("i")
        return view[mask]

    def nvidia(self, free_mask: int, k: int) -> int:
        """NVIDIA's group for ``free_mask`` (best_effort.py's rule, without required GPUs)."""
        totals = self._totals.get(k)
        if totals is None:
            totals = self._totals[k] = _kernel.partitions(self._scores, self.n, k)
        return _kernel.nvidia_choice(self._scores, totals, self.n, k, free_mask)

    def ideal(self, free_mask: int, k: int) -> int:
        """``ideal``'s set for ``free_mask`` (ideal.py's rule for k ≥ 2, without required GPUs)."""
        return _kernel.ideal_choice(self._scores, self._best_table(k), self._adjacency, self.n, k, free_mask)

    def _best_table(self, k: int) -> bytes:
        found = self._best.get(k)
        if found is None:
            found = self._best[k] = _kernel.best_sets(self._scores, self.n, k)
        return found


def subset_tables(m: Matrix) -> SubsetTables | None:
    """Tables for this board when the kernel is built and the board fits them; None: search instead."""
    n = len(m.indices)
    if _kernel is None or not 1 <= n <= SUBSET_LIMIT:
        return None
    if sum(value for row in m.w for value in row) // 2 > _INT_MAX:  # every score ≤ the whole board's
        return None
    return SubsetTables(m)
