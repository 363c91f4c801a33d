"""Past 16 GPUs: a bounded search, never an exponential one.

The exact methods (branch and bound for the best k-set, NVIDIA's partition DP) take seconds past 16
GPUs and never finish at 40, so a board with more than :data:`EXACT_LIMIT` GPUs gets, for both:

- a greedy start: a k-set grown from the best pair by the GPU adding most; a partition grown group by
  group from the first ungrouped GPU the same way (the padded group, of m mod k GPUs, last);
- local improvement: swap one chosen GPU for one left out (or two GPUs between two groups) while a
  swap gains, best swap first, at most :data:`MAX_PASSES` passes of O(m²) each.

Work is O(MAX_PASSES · m²) with m ≤ :data:`MAX_GPUS` (at most 16 × 4,096 swap looks). The answer is
a local optimum under single swaps; its gap to the exact optimum is measured by
``benchmarks/placement.py`` on boards where exhaustive search is feasible (16 GPUs): see
docs/performance.md, "Placement". Ties go to the lowest indices, as in the exact methods.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["EXACT_LIMIT", "MAX_GPUS", "MAX_PASSES", "MAX_STARTS", "good_partition", "good_set", "greedy_score"]

EXACT_LIMIT = 16
MAX_GPUS = 64
MAX_PASSES = 16
MAX_STARTS = 8


def good_set(w: Sequence[Sequence[int]], free: Sequence[int], k: int, required: Sequence[int] = ()) -> list[int]:
    """A k-set of ``free`` positions holding ``required``, with a high score: greedy, then best
    single swaps (a required GPU is never swapped out)."""
    if k >= len(free):
        return sorted(free)
    # Greedy from the MAX_STARTS best-connected free GPUs, the best start kept.
    strongest = sorted(free, key=lambda p: -sum(w[p][q] for q in free))[:MAX_STARTS]
    starts = [list(required)] if required else [[p] for p in strongest]
    chosen = max((_greedy(w, list(free), k, start) for start in starts), key=lambda c: _score(w, c))
    inside = {p: sum(w[p][q] for q in chosen) for p in free}  # each GPU's weights to the chosen set
    for _ in range(MAX_PASSES):
        best_gain, swap = 0, None
        for x in chosen:
            if x in required:
                continue
            for y in free:
                if y in chosen:
                    continue
                gain = inside[y] - w[y][x] - inside[x]
                if gain > best_gain:
                    best_gain, swap = gain, (x, y)
        if swap is None:
            break
        x, y = swap
        chosen.remove(x)
        chosen.append(y)
        for p in free:
            inside[p] += w[p][y] - w[p][x]
    return sorted(chosen)


def good_partition(w: Sequence[Sequence[int]], free: Sequence[int], k: int) -> list[list[int]]:
    """Groups of k of ``free`` (the last holding the m mod k left over) with a high total: greedy
    groups, then best swaps between two groups."""
    rest = list(free)
    groups: list[list[int]] = []
    while rest:
        group = good_set(w, rest, min(k, len(rest)))  # the best group left, then the next
        groups.append(group)
        rest = [p for p in rest if p not in group]
    owner = {p: g for g, group in enumerate(groups) for p in group}
    # toward[p][g]: p's weights to the members of group g.
    toward = {p: [sum(w[p][q] for q in group) for group in groups] for p in free}
    for _ in range(MAX_PASSES):
        best_gain, swap = 0, None
        for i, x in enumerate(free):
            gx = owner[x]
            for y in free[i + 1 :]:
                gy = owner[y]
                if gx == gy:
                    continue
                gain = toward[y][gx] - toward[x][gx] + toward[x][gy] - toward[y][gy] - 2 * w[x][y]
                if gain > best_gain:
                    best_gain, swap = gain, (x, y)
        if swap is None:
            break
        x, y = swap
        gx, gy = owner[x], owner[y]
        owner[x], owner[y] = gy, gx
        for p in free:
            toward[p][gx] += w[p][y] - w[p][x]
            toward[p][gy] += w[p][x] - w[p][y]
    return [sorted(p for p in free if owner[p] == g) for g in range(len(groups))]


def _greedy(w: Sequence[Sequence[int]], pool: list[int], size: int, start: list[int]) -> list[int]:
    """``size`` GPUs of ``pool``: from ``start`` (or, when empty, the best pair), add whichever adds most."""
    chosen = list(start)
    if not chosen:
        a, b = max(((a, b) for i, a in enumerate(pool) for b in pool[i + 1 :]), key=lambda ab: w[ab[0]][ab[1]])
        chosen = [a, b][:size]
    gain = {p: sum(w[p][q] for q in chosen) for p in pool if p not in chosen}
    while len(chosen) < size:
        p = max(gain, key=lambda q: (gain[q], -q))
        del gain[p]
        chosen.append(p)
        for q in gain:
            gain[q] += w[q][p]
    return chosen


def _score(w: Sequence[Sequence[int]], chosen: list[int]) -> int:
    return sum(w[a][b] for i, a in enumerate(chosen) for b in chosen[i + 1 :])


def greedy_score(w: Sequence[Sequence[int]], free: list[int], k: int) -> int:
    """The score of one greedy k-set from the best pair: a cheap floor for an exact search."""
    return _score(w, _greedy(w, free, k, []))
