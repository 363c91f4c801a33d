"""``nvidia-best-effort``: what NVIDIA's allocator picks, computed exactly.

NVIDIA's device plugin splits all free GPUs into groups of k (the list padded with empty slots to a
multiple of k, one group holding all the padding), keeps the first partition, in its lexicographic
iteration order, with the highest total, and returns its best group holding the required GPUs.
Greedy is wrong here because links are not hierarchical: the best single set can strand the rest. We
compute it exactly by dynamic programming over bitmasks, with the same tie order. Its faults are
fixed: NVSwitch links count (the topology model carries them), a padded group is never returned (5
free, k=3 gives 3 GPUs, not 2), and nothing panics on odd input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import combinations
from typing import Literal

from extender.placement.bounded import EXACT_LIMIT, good_partition, good_set
from extender.placement.matrix import PlacementImpossible, bits
from extender.placement.wiring import Wiring

__all__ = ["NvidiaBestEffort"]


class NvidiaBestEffort:
    name: Literal["nvidia-best-effort"] = "nvidia-best-effort"

    def choose(self, wiring: Wiring, free_mask: int, required_mask: int, k: int) -> tuple[int, ...]:
        """The positions of the chosen set (free and required masks are valid, k ≤ free)."""
        real = bits(free_mask)
        if k == 1:
            # NVIDIA's k=1 shortcut: each GPU is its own partition; the first that holds the required wins.
            return (real[0],) if not required_mask else tuple(bits(required_mask))
        if len(real) > EXACT_LIMIT:
            return _bounded(wiring, real, required_mask, k)
        if wiring.subsets is not None and not required_mask:
            return tuple(bits(wiring.subsets.nvidia(free_mask, k)))  # the same rule, walked in C
        p = _Partitions(wiring, k, required_mask)
        # The partition is rebuilt level by level from the first group (in NVIDIA's order) that
        # reaches the optimum, which is exactly the partition NVIDIA's strict ">" keeps.
        slots, pad_left = free_mask, len(real) % k != 0
        if p.solve(slots, pad_left) < 0:
            raise PlacementImpossible("no grouping of the free GPUs keeps the required GPUs together")
        best_group, best_score = 0, -1
        while slots:
            target = p.solve(slots, pad_left)
            for gmask, padded in p.groups(slots, pad_left):
                rest, rest_pad = slots & ~gmask, pad_left and not padded
                sub = p.solve(rest, rest_pad)
                if sub >= 0 and (score := p.group_score(gmask)) + sub == target:
                    # Fix: NVIDIA may return the padded group, i.e. fewer GPUs than asked for.
                    if not padded and gmask & required_mask == required_mask and score > best_score:
                        best_group, best_score = gmask, score
                    slots, pad_left = rest, rest_pad
                    break
        if not best_group:
            raise PlacementImpossible("no unpadded group holds the required GPUs")
        return tuple(bits(best_group))


def _bounded(wiring: Wiring, real: list[int], required_mask: int, k: int) -> tuple[int, ...]:
    """Past 16 free GPUs: the best full group of a good partition (NVIDIA's rule on a bounded search);
    with required GPUs, a good set holding them."""
    w = wiring.matrix.w
    if required_mask:
        return tuple(good_set(w, real, k, bits(required_mask)))
    groups = [g for g in good_partition(w, real, k) if len(g) == k]
    return tuple(max(groups, key=wiring.matrix.score))  # max keeps the first of equal scores, as NVIDIA


class _Partitions:
    """The best-partition DP for one (wiring, k, required set); sub-results live on the wiring, so
    every query on the same machine type, k and required set shares them (the padding follows from the
    count of GPUs still to group)."""

    def __init__(self, wiring: Wiring, k: int, required_mask: int) -> None:
        m = wiring.matrix
        self.k, self.required_mask = k, required_mask
        self.big = len(m.indices)  # padding slots sit after every real GPU, as NVIDIA appends them
        self.w = m.w
        self.scores = wiring.group_scores
        self.set_scores = wiring.set_scores
        self.memo = wiring.partitions.setdefault((k, required_mask), {})
        # A state's best total is the same for any swap of twin GPUs, so states are memoised in a
        # canonical form (each twin class filled from its lowest member). Required GPUs never swap.
        self.canonical = _canonical_form([(c, pre) for c, pre in m.twins if not c & required_mask])

    def group_score(self, gmask: int) -> int:
        if self.set_scores is not None:
            return self.set_scores[gmask]
        score = self.scores.get(gmask)
        if score is None:
            ps, w = bits(gmask), self.w
            score = self.scores[gmask] = sum(w[a][b] for i, a in enumerate(ps) for b in ps[i + 1 :])
        return score

    def groups(self, slots: int, pad_left: bool) -> Iterable[tuple[int, bool]]:
        """Valid groups holding the first slot, in NVIDIA's order: (GPU mask, takes the padding)."""
        k, big, required_mask = self.k, self.big, self.required_mask
        members = bits(slots)
        pad = (-len(members)) % k if pad_left else 0
        first = 1 << members[0]
        for combo in combinations(members[1:] + list(range(big, big + pad)), k - 1):
            n_pads = sum(1 for s in combo if s >= big)
            if n_pads not in (0, pad):
                continue  # NVIDIA: a group holds all the padding or none of it
            gmask = first
            for s in combo:
                if s < big:
                    gmask |= 1 << s
            if required_mask and gmask & required_mask and (gmask & required_mask != required_mask or n_pads):
                continue  # the required GPUs must sit together in one unpadded group
            yield gmask, n_pads > 0

    def solve(self, slots: int, pad_left: bool) -> int:
        """The best partition total of ``slots`` (-1: no valid partition)."""
        if not slots:
            return 0
        key = (self.canonical(slots), pad_left)
        best = self.memo.get(key)
        if best is None and self.set_scores is not None and not self.required_mask:
            best = self.memo[key] = self._solve_plain(slots, self.set_scores)
        elif best is None:
            best = -1
            for gmask, padded in self.groups(slots, pad_left):
                sub = self.solve(slots & ~gmask, pad_left and not padded)
                if sub >= 0 and self.group_score(gmask) + sub > best:
                    best = self.group_score(gmask) + sub
            self.memo[key] = best
        return best

    def _solve_plain(self, slots: int, scores: Sequence[int]) -> int:
        """:meth:`solve` without required GPUs and with every subset's score at hand: groups as plain
        masks (the best total does not depend on NVIDIA's order), the last two groups in one pass."""
        k, members = self.k, bits(slots)
        count = len(members)
        if count <= k:
            return scores[slots]  # one group: k GPUs, or the padded group
        first, rest = 1 << members[0], [1 << p for p in members[1:]]
        sizes = (k - 1, count % k - 1) if count % k else (k - 1,)
        groups = [first | sum(c) for size in sizes for c in combinations(rest, size)]
        if count <= 2 * k:  # whatever the first group leaves is one group
            return max([scores[g] + scores[slots ^ g] for g in groups])
        return max([scores[g] + self.solve(slots ^ g, (count - g.bit_count()) % k != 0) for g in groups])


def _canonical_form(twins: list[tuple[int, tuple[int, ...]]]) -> Callable[[int], int]:
    def canonical(slots: int) -> int:
        for cmask, prefixes in twins:
            inside = slots & cmask
            if inside:
                slots = (slots & ~cmask) | prefixes[inside.bit_count()]
        return slots

    return canonical
