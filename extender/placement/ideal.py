"""``ideal``: the highest-scoring set; ties go to the set that leaves the best remaining set of the
same size, then the largest remaining NVLink island, then the lowest indices. k = 1 takes the
worst-connected free GPU, so NVLink pairs stay whole."""

from __future__ import annotations

from itertools import combinations
from typing import Literal

from extender.placement.best_sets import max_sets
from extender.placement.bounded import EXACT_LIMIT, good_set, greedy_score
from extender.placement.matrix import bits, largest_island
from extender.placement.wiring import Wiring

__all__ = ["Ideal"]


class Ideal:
    name: Literal["ideal"] = "ideal"

    def choose(self, wiring: Wiring, free_mask: int, required_mask: int, k: int) -> tuple[int, ...]:
        """The positions of the chosen set (free and required masks are valid, k ≤ free)."""
        w = wiring.matrix.w
        free = bits(free_mask)
        if k == 1:
            if required_mask:
                return tuple(bits(required_mask))
            # Worst-connected first: taking it breaks the least; ties go to the lowest index.
            return (min(free, key=lambda p: (sum(w[p][q] for q in free), p)),)
        req = bits(required_mask)
        if len(free) > EXACT_LIMIT:
            return tuple(good_set(w, free, k, req))  # bounded: an exact search is exponential here
        if wiring.subsets is not None and not req:
            return tuple(bits(wiring.subsets.ideal(free_mask, k)))  # the same rule, over tables in C
        # Required GPUs: search the rest for k - r GPUs, scoring pairs with the required ones as well.
        if req:
            rest_mask = free_mask & ~required_mask
            candidates = (tuple(sorted((*req, *combo))) for combo in combinations(bits(rest_mask), k - len(req)))
            return max(candidates, key=lambda t: _rank(wiring, free_mask, t, k))
        _, ties = max_sets(wiring.matrix, free_mask, k, True, greedy_score(w, free, k))
        if len(ties) == 1:
            return tuple(sorted(ties[0]))
        return max((tuple(sorted(t)) for t in ties), key=lambda t: _rank(wiring, free_mask, t, k))


def _rank(wiring: Wiring, free_mask: int, chosen: tuple[int, ...], k: int) -> tuple[int, ...]:
    """Higher is better: the set's score, the best k-set it leaves, the largest NVLink island left."""
    left = free_mask
    for p in chosen:
        left &= ~(1 << p)
    leftover = wiring.best_score(left, k)
    # Negated positions: among full ties the lowest indices win under max().
    return (
        wiring.matrix.score(chosen),
        -1 if leftover is None else leftover,
        largest_island(wiring.matrix, left),
        *(-p for p in chosen),
    )
