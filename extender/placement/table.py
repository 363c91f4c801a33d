"""Placement tables: on a board of up to 8 GPUs, every free set × k is answered once per wiring.

A fleet has a few machine types, and a board of n ≤ 8 GPUs has only 2^n free sets and n request sizes,
so both policies' answers for all of them (256 × 8 per policy at n = 8) are worked out when the
wiring is first seen, and every query after that is a lookup. The answers are the ones the searches
in ``ideal.py`` and ``best_effort.py`` give (a test compares them on every free set and size); they
are only computed all at once, bottom-up over bitmasks: every subset's score once, every subset's
best k-set once, NVIDIA's best partition total of every subset once per k.

Required GPUs are not tabled (they are rare: the CLI and explain ask for them); such a query searches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from extender.placement.matrix import Matrix, bits, largest_island

__all__ = ["TABLE_LIMIT", "Table", "build_table", "pair_sums"]

TABLE_LIMIT = 8


@dataclass(frozen=True)
class Table:
    """Answers for one wiring, indexed by position masks.

    ``score[S]``: the set score of S; ``best[k][S]``: the best score of a k-subset of S (-1: S has
    fewer than k); ``choices[policy][k][F]``: the mask the policy takes from free set F (0: |F| < k).
    """

    score: list[int]
    best: list[list[int]]
    choices: dict[str, list[list[int]]]
    # By mask, what an answer carries: its GPU indices and the share of its pairs joined by NVLink.
    gpus: list[tuple[int, ...]]
    nvlink_share: list[float]


def build_table(m: Matrix) -> Table:
    n = len(m.indices)
    score = pair_sums(m.w)
    subsets = _subsets_by_size(n)
    best = [[-1] * (1 << n) for _ in range(n + 1)]
    for mask in range(1 << n):
        for size, subs in enumerate(subsets[mask]):
            if subs:
                best[size][mask] = max(score[s] for s in subs) if size > 1 else 0
    island = [largest_island(m, mask) for mask in range(1 << n)]
    ideal = _ideal_choices(n, score, best, island, subsets)
    nvidia = [[0] * (1 << n)] * 2
    for k in range(2, n + 1):
        nvidia.append(_nvidia_choices(n, k, score, subsets))
    nvidia[1] = [mask & -mask for mask in range(1 << n)]  # NVIDIA's k=1 shortcut: the first free GPU
    links = pair_sums([[1 if adj >> q & 1 else 0 for q in range(n)] for adj in m.nvlink_adj])
    share = [links[s] / pairs if (pairs := s.bit_count() * (s.bit_count() - 1) // 2) else 1.0 for s in range(1 << n)]
    gpus = [m.gpus_of(mask) for mask in range(1 << n)]
    return Table(score, best, {"ideal": ideal, "nvidia-best-effort": nvidia}, gpus, share)


def pair_sums(w: Sequence[Sequence[int]]) -> list[int]:
    """The sum of w over every pair of every mask, by doubling: a mask with top bit h scores its
    lower part plus h's weights to that part."""
    sums = [0]
    for h in range(len(w)):
        cross = [0]
        for j in range(h):
            wj = w[h][j]
            cross += [c + wj for c in cross]
        sums += [s + c for s, c in zip(sums, cross, strict=True)]
    return sums


@cache
def _subsets_by_size(n: int) -> list[list[list[int]]]:
    """subsets[T][c]: the submasks of T with c bits (the same for every wiring of n GPUs)."""
    out = []
    for mask in range(1 << n):
        by_size: list[list[int]] = [[] for _ in range(n + 1)]
        sub = mask
        while True:
            by_size[sub.bit_count()].append(sub)
            if not sub:
                break
            sub = (sub - 1) & mask
        out.append(by_size)
    return out


def _ideal_choices(
    n: int, score: list[int], best: list[list[int]], island: list[int], subsets: list[list[list[int]]]
) -> list[list[int]]:
    """``ideal``'s rule (see ``ideal.py``) over every free set: the best score, then the best k-set
    left, then the largest NVLink island left, then the lowest indices."""
    # Lowest sorted positions first = the highest value with the bit order reversed.
    low_first = [sum(1 << (n - 1 - p) for p in bits(mask)) for mask in range(1 << n)]
    choices = [[0] * (1 << n) for _ in range(n + 1)]
    for free in range(1, 1 << n):
        # k = 1: the worst-connected free GPU (its weights to the rest of the free set), lowest index.
        choices[1][free] = 1 << min(bits(free), key=lambda p: (score[free] - score[free & ~(1 << p)], p))
        for k in range(2, free.bit_count() + 1):
            subs = subsets[free][k]
            top = max(score[s] for s in subs)
            ties = [s for s in subs if score[s] == top]
            choices[k][free] = max(ties, key=lambda s: (best[k][free ^ s], island[free ^ s], low_first[s]))
    return choices


def _nvidia_choices(n: int, k: int, score: list[int], subsets: list[list[list[int]]]) -> list[int]:
    """NVIDIA's pick for every free set (see ``best_effort.py``): the best partition total of every
    subset bottom-up, then each free set's first best partition in NVIDIA's order, rebuilt group by
    group, and its first highest-scoring unpadded group."""
    total = [0] * (1 << n)
    for slots in range(1, 1 << n):
        # Smaller masks come first, so every remainder is known. A subset whose count is not a
        # multiple of k still owes the padded group, of count % k real GPUs (NVIDIA pads at the end).
        total[slots] = max(score[g] + total[slots ^ g] for g in _groups(slots, k, subsets))
    choices = [0] * (1 << n)
    for free in range(1, 1 << n):
        if free.bit_count() < k:
            continue
        slots, chosen, chosen_score = free, 0, -1
        while slots:
            target = total[slots]
            group = min((g for g in _groups(slots, k, subsets) if score[g] + total[slots ^ g] == target), key=_order)
            # A padded group has fewer than k GPUs and is never returned (NVIDIA's fault, fixed).
            if group.bit_count() == k and score[group] > chosen_score:
                chosen, chosen_score = group, score[group]
            slots ^= group
        choices[free] = chosen
    return choices


def _groups(slots: int, k: int, subsets: list[list[list[int]]]) -> list[int]:
    """The groups NVIDIA may take next from ``slots``: k real GPUs, or the padded group (count % k
    real GPUs), each holding the first slot."""
    first = slots & -slots
    rest = subsets[slots ^ first]
    count = slots.bit_count()
    padded = count % k
    out = [first | g for g in rest[k - 1]] if count >= k else []
    if padded:
        out += [first | g for g in rest[padded - 1]]
    return out


def _order(group: int) -> tuple[int, ...]:
    """NVIDIA's iteration order among groups holding the same first slot: lexicographic over the
    rest of the group, padding slots sorting after every GPU (so an unpadded group comes before a
    padded one with the same prefix)."""
    return (*bits(group)[1:], 1 << 30)
