"""What has been worked out about one wiring (a topology fingerprint): its matrix and every memo.

A fleet has a few machine types and thousands of nodes, so all work that depends only on how a
board is wired — best set scores per free mask, NVIDIA's partition sub-results, finished answers — is
kept here, once per fingerprint, and shared by every node of that type.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

from extender.model.topology import GpuTopology
from extender.placement.best_sets import max_sets
from extender.placement.bounded import EXACT_LIMIT, good_set, greedy_score
from extender.placement.matrix import Matrix, bits, matrix_of
from extender.placement.subsets import SubsetTables, subset_tables
from extender.placement.table import TABLE_LIMIT, Table, build_table, pair_sums

__all__ = ["CACHE_LIMIT", "Wiring"]

CACHE_LIMIT = 65536


class Wiring:
    """One board's matrix and memos; every key is content (masks, sizes, policy names)."""

    def __init__(self, topo: GpuTopology, tables: bool = True, compiled: bool = True) -> None:
        """``tables``: work out per-mask tables for the machine type (off: search each question);
        ``compiled``: use the compiled kernel for 9-16 GPUs where it is built (off: the Python search)."""
        self.fingerprint = topo.fingerprint
        self.matrix: Matrix = matrix_of(topo)
        # Boards of up to 8 GPUs get every answer up front (a few ms, once per machine type).
        self.table: Table | None = build_table(self.matrix) if tables and len(topo.indices) <= TABLE_LIMIT else None
        # 9 to 16 GPUs: per-mask tables from the compiled kernel (subsets.py), or, without it, every
        # subset's score in one flat array (65,536 × 8 bytes at 16, ~15 ms once per machine type) for
        # the partition search to score a group with one lookup.
        self.subsets: SubsetTables | None = None
        self.set_scores: Sequence[int] | None = None
        n = len(topo.indices)
        if self.table is not None:
            self.set_scores = array("q", self.table.score)
        elif tables and n <= EXACT_LIMIT:
            self.subsets = subset_tables(self.matrix) if compiled else None
            self.set_scores = self.subsets.score if self.subsets is not None else array("q", pair_sums(self.matrix.w))
        # What each free mask leaves (fragmentation), shared by every answer that leaves that mask.
        self.leaves: dict[int, Any] = {}
        self._best_scores: dict[tuple[int, int], int | None] = {}
        # nvidia-best-effort's partition sub-results by (k, required mask), and its group scores.
        self.partitions: dict[tuple[int, int], dict[tuple[int, bool], int]] = {}
        self.group_scores: dict[int, int] = {}
        # Finished assessments by (free mask, required mask, k, policy, clique asked).
        self.answers: dict[tuple[int, int, int, str, bool], Any] = {}
        # A tabled board's assessments for every free set and size (no required GPUs, no cliques), built
        # with the table so a new allocation state is a lookup too; always among the answers.
        self.tabled: dict[tuple[int, int, int, str, bool], Any] = {}

    def best_score(self, free_mask: int, k: int) -> int | None:
        """The best score any k-set of ``free_mask`` reaches (None: fewer than k free)."""
        if k > free_mask.bit_count():
            return None
        if k <= 1:
            return 0
        if self.table is not None:
            return self.table.best[k][free_mask]
        if self.subsets is not None:
            return self.subsets.best_score(free_mask, k)
        key = (free_mask, k)
        found = self._best_scores.get(key, -1)
        if found == -1:
            if len(self._best_scores) >= CACHE_LIMIT:
                self._best_scores.clear()
            free, w = bits(free_mask), self.matrix.w
            if k == 2:  # the best pair: every pair looked at, no search
                found = max(w[a][b] for i, a in enumerate(free) for b in free[i + 1 :])
            elif len(free) > EXACT_LIMIT:
                # Bounded past 16 GPUs: a good set's score (a lower bound of the best, see bounded.py).
                found = self.matrix.score(good_set(w, free, k))
            else:
                found = max_sets(self.matrix, free_mask, k, False, greedy_score(w, free, k))[0]
            self._best_scores[key] = found
        return found

    def remember(self, key: tuple[int, int, int, str, bool], answer: Any) -> None:
        """Keep a finished answer; past the limit, answers and partition memos start over."""
        if len(self.answers) >= CACHE_LIMIT or (
            self.partitions and sum(map(len, self.partitions.values())) >= 16 * CACHE_LIMIT
        ):
            self.answers.clear()
            self.partitions.clear()
            if self.table is None:  # with a table, leaves hold one entry per mask: bounded already
                self.leaves.clear()
            self.answers.update(self.tabled)
        self.answers[key] = answer

    def forget_answers(self) -> None:
        """Forget finished answers, keep the per-wiring work (benchmarks: a new free set, known type)."""
        self.answers.clear()
        self.answers.update(self.tabled)
