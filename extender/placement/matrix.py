"""The weight matrix of one wiring as bitmasks: pair scores, NVLink adjacency, twin classes.

Every policy works on positions 0..n-1 over the topology's sorted GPU indices, and on sets of them as
int bitmasks; this module turns a :class:`GpuTopology` into that form once per wiring.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import reduce
from operator import or_

from extender.errors import NoAnswer
from extender.model.topology import GpuTopology, Link, PcieLevel

__all__ = [
    "NVLINK_SCORE",
    "PCIE_SCORE",
    "Matrix",
    "PlacementImpossible",
    "bits",
    "largest_island",
    "matrix_of",
    "nvlink_clique_mask",
    "pair_score",
    "twin_classes",
]

PCIE_SCORE: dict[PcieLevel | None, int] = {
    PcieLevel.SYS: 10,
    PcieLevel.NODE: 20,
    PcieLevel.PHB: 30,
    PcieLevel.PXB: 40,
    PcieLevel.PIX: 50,
    PcieLevel.INTERNAL: 60,
    None: 0,
}
NVLINK_SCORE = 100


class PlacementImpossible(NoAnswer):
    """No set of the requested size exists; the message says why in one line."""


def pair_score(link: Link) -> int:
    return PCIE_SCORE[link.pcie] + NVLINK_SCORE * link.nvlinks


@dataclass(frozen=True)
class Matrix:
    """Pair scores by position (0..n-1 over the topology's sorted indices) and NVLink adjacency masks."""

    indices: tuple[int, ...]
    w: tuple[tuple[int, ...], ...]
    nvlink_adj: tuple[int, ...]
    position: dict[int, int] = field(hash=False)
    bit: dict[int, int] = field(hash=False)  # GPU index → its position's bit
    # Twin classes of the whole board (swapping two twins is an automorphism): (class mask, prefix
    # masks by count), for classes of two or more GPUs.
    twins: tuple[tuple[int, tuple[int, ...]], ...] = ()

    @property
    def full(self) -> int:
        """The mask of every GPU on the board."""
        return (1 << len(self.indices)) - 1

    def mask_of(self, gpus: Iterable[int], what: str) -> int:
        """GPU indices → a position mask; an index not on this board is :class:`PlacementImpossible`."""
        try:
            return reduce(or_, map(self.bit.__getitem__, gpus), 0)  # the hot path of every cached answer
        except KeyError as exc:
            listed = ", ".join(map(str, self.indices))
            raise PlacementImpossible(f"{what} GPU {exc.args[0]} is not on this node (GPUs: {listed})") from None

    def gpus_of(self, mask: int) -> tuple[int, ...]:
        return tuple(self.indices[p] for p in bits(mask))

    def score(self, positions: Iterable[int]) -> int:
        """The set score: the sum of the pair scores over every pair of these positions."""
        ps = list(positions)
        w = self.w
        return sum(w[a][b] for i, a in enumerate(ps) for b in ps[i + 1 :])


def matrix_of(topo: GpuTopology) -> Matrix:
    idx = topo.indices
    pos = {g: p for p, g in enumerate(idx)}
    w = [[0] * len(idx) for _ in idx]
    adj = [0] * len(idx)
    for link in topo.links:
        a, b = pos[link.a], pos[link.b]
        w[a][b] = w[b][a] = pair_score(link)
        if link.nvlinks:
            adj[a] |= 1 << b
            adj[b] |= 1 << a
    twins = []
    for cls in twin_classes(w, list(range(len(idx)))):
        if len(cls) > 1:
            prefixes = [sum(1 << p for p in cls[:c]) for c in range(len(cls) + 1)]
            twins.append((sum(1 << p for p in cls), tuple(prefixes)))
    bit = {g: 1 << p for g, p in pos.items()}
    return Matrix(idx, tuple(map(tuple, w)), tuple(adj), pos, bit, tuple(twins))


def bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def twin_classes(w: Sequence[Sequence[int]], free: list[int]) -> list[list[int]]:
    """Free positions grouped into twin classes (identical scores to every other free GPU)."""
    classes: list[list[int]] = []
    for p in free:
        for cls in classes:
            q = cls[0]
            if all(w[p][x] == w[q][x] for x in free if x != p and x != q):
                cls.append(p)
                break
        else:
            classes.append([p])
    return classes


def largest_island(m: Matrix, free_mask: int) -> int:
    """The most free GPUs one another can reach over NVLink (through free GPUs only)."""
    largest, left = 0, free_mask
    while left:
        seed = left & -left
        island, frontier = seed, seed
        while frontier:
            low = frontier & -frontier
            frontier ^= low
            grow = m.nvlink_adj[low.bit_length() - 1] & free_mask & ~island
            island |= grow
            frontier |= grow
        largest = max(largest, island.bit_count())
        left &= ~island
    return largest


def nvlink_clique_mask(adj: Sequence[int], mask: int, k: int) -> int | None:
    """Some k positions of ``mask`` joined pairwise by NVLink (the lowest such), or None."""

    def grow(chosen: int, candidates: int, need: int) -> int | None:
        if need == 0:
            return chosen
        while candidates and candidates.bit_count() >= need:
            low = candidates & -candidates
            p = low.bit_length() - 1
            candidates ^= low
            found = grow(chosen | low, candidates & adj[p], need - 1)
            if found is not None:
                return found
        return None

    if k <= 1:
        return (mask & -mask) or None if k == 1 else None
    return grow(0, mask, k)
