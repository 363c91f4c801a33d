"""The best k-sets of a free mask: branch and bound over twin classes.

GPUs that are twins among the free ones (same score to every other free GPU, as on NVSwitch boards)
are interchangeable, so the search only considers the lowest-indexed members of each twin class.
"""

from __future__ import annotations

from extender.placement.matrix import Matrix, bits, twin_classes

__all__ = ["max_sets"]


def max_sets(m: Matrix, free_mask: int, k: int, all_ties: bool, floor: int = -1) -> tuple[int, list[tuple[int, ...]]]:
    """The best score of a k-set within ``free_mask``, and the canonical sets reaching it (all ties,
    or just the first found). Sets are tuples of positions, one representative per twin symmetry.

    ``floor`` is a score some k-set is known to reach (a greedy set's): branches that cannot reach it
    are cut from the start. When the best equals the floor and ``all_ties`` is off, no set is listed.
    """
    free = bits(free_mask)
    classes = twin_classes(m.w, free)
    order = [p for cls in classes for p in cls]
    next_class: list[int] = []
    for cls in classes:
        next_class += [len(next_class) + len(cls)] * len(cls)
    n, w = len(order), m.w
    top = _top_sums(m, free, order)
    best = floor
    found: list[tuple[int, ...]] = []
    chosen: list[int] = []
    gain = [0] * n  # gain[i]: score added by taking order[i] given the chosen ones

    def visit(i: int, score: int) -> None:
        nonlocal best, found
        r = k - len(chosen)
        if r == 0:
            if score > best:
                best, found = score, [tuple(chosen)]
            elif score == best and all_ties:
                found.append(tuple(chosen))
            return
        if n - i < r:
            return
        if best >= 0:
            optimistic = sorted((2 * gain[j] + top[j][r - 1] for j in range(i, n)), reverse=True)
            bound2 = 2 * score + sum(optimistic[:r])
            if bound2 < 2 * best or (bound2 == 2 * best and not all_ties):
                return
        p = order[i]
        row = w[p]
        chosen.append(p)
        for j in range(i + 1, n):
            gain[j] += row[order[j]]
        visit(i + 1, score + gain[i])
        for j in range(i + 1, n):
            gain[j] -= row[order[j]]
        chosen.pop()
        # Skipping p means skipping its later twins too: any set using them has a twin with p instead.
        visit(next_class[i], score)

    visit(0, 0)
    return best, found


def _top_sums(m: Matrix, free: list[int], order: list[int]) -> list[list[int]]:
    """top[i][t]: the sum of the t largest scores from order[i] to other free GPUs.

    A set's score counts each pair once from each end at half weight, so twice the score is at most
    the sum over its members of (2 × gain to the chosen ones + their best r-1 pair scores to anyone):
    the bound that prunes the search.
    """
    top = []
    for p in order:
        row = sorted((m.w[p][q] for q in free if q != p), reverse=True)
        sums = [0]
        for value in row:
            sums.append(sums[-1] + value)
        top.append(sums)
    return top
