"""The GPU set a node will hand a pod, and what that leaves behind. Pure: no I/O, web or Kubernetes.

Pair score (NVIDIA's best-effort weights, so our prediction agrees with the device plugin's
``GetPreferredAllocation``)::

    PCIe level: SYS 10, NODE 20, PHB 30, PXB 40, PIX 50, INTERNAL 60, unknown 0;  plus 100 per NVLink
    set score = sum of the pair scores over every pair in the set

Two policies choose a set of k among the free GPUs:

``nvidia-best-effort``
    What NVIDIA's allocator picks: split all free GPUs into groups of k (the list padded with empty
    slots to a multiple of k, one group holding all the padding), keep the first partition, in its
    lexicographic iteration order, with the highest total, and return its best group holding the
    required GPUs. Greedy is wrong here because links are not hierarchical: the best single set can
    strand the rest. Computed exactly by dynamic programming over bitmasks, with the same tie order.
    Its faults are fixed: NVSwitch links count (the topology model carries them), a padded group is
    never returned (5 free, k=3 gives 3 GPUs, not 2), and nothing panics on odd input.
``ideal``
    The highest-scoring set; ties go to the set that leaves the best remaining set of the same size,
    then the largest remaining NVLink island, then the lowest indices. k = 1 takes the worst-connected
    free GPU, so NVLink pairs stay whole.

Both are exact for up to 16 GPUs (more are accepted, but slower). GPUs that are twins among the free
ones (same score to every other free GPU, as on NVSwitch boards) are interchangeable, so the ideal
search only considers the lowest-indexed members of each twin class. Results are cached by (topology
fingerprint, free mask, required mask, k, policy): thousands of nodes of a few machine types cost one
computation each.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import combinations
from typing import Literal

from extender.errors import NoAnswer
from extender.model.topology import GpuTopology, Link, PcieLevel

__all__ = [
    "FRAGMENTATION_SIZES",
    "NVLINK_SCORE",
    "PCIE_SCORE",
    "Leaves",
    "Placement",
    "PlacementImpossible",
    "Policy",
    "all_nvlink",
    "best_placement",
    "best_set_score",
    "clear_caches",
    "forget_answers",
    "leaves_behind",
    "nvlink_clique",
    "pair_score",
    "set_score",
]

Policy = Literal["ideal", "nvidia-best-effort"]
POLICIES: tuple[Policy, ...] = ("ideal", "nvidia-best-effort")

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
FRAGMENTATION_SIZES = (2, 4, 8)
_CACHE_LIMIT = 65536


class PlacementImpossible(NoAnswer):
    """No set of the requested size exists; the message says why in one line."""


def pair_score(link: Link) -> int:
    return PCIE_SCORE[link.pcie] + NVLINK_SCORE * link.nvlinks


@dataclass(frozen=True)
class Leaves:
    """What the free GPUs can still do after a placement (the fragmentation it causes).

    ``best_score[s]`` is the best set score of size s among the GPUs left free (None: fewer than s
    left); ``quality[s]`` is that as a share of the best size-s set of the whole, empty node (1.0: as
    good as an empty node, 0.0: cannot serve s at all).
    """

    free: tuple[int, ...]
    largest_nvlink_island: int
    best_score: dict[int, int | None] = field(hash=False)
    quality: dict[int, float] = field(hash=False)

    def to_dict(self) -> dict[str, object]:
        return {
            "free": list(self.free),
            "largest_nvlink_island": self.largest_nvlink_island,
            "best_score": {str(s): v for s, v in self.best_score.items()},
            "quality": {str(s): round(v, 4) for s, v in self.quality.items()},
        }


@dataclass(frozen=True)
class Placement:
    gpus: tuple[int, ...]
    score: int
    policy: Policy
    leaves: Leaves

    def to_dict(self) -> dict[str, object]:
        return {"gpus": list(self.gpus), "score": self.score, "policy": self.policy, "leaves": self.leaves.to_dict()}


# -- the weight matrix, once per wiring --------------------------------------------------------------


@dataclass(frozen=True)
class _Matrix:
    """Pair scores by position (0..n-1 over the topology's sorted indices) and NVLink adjacency masks."""

    indices: tuple[int, ...]
    w: tuple[tuple[int, ...], ...]
    nvlink_adj: tuple[int, ...]
    position: dict[int, int] = field(hash=False)
    # Twin classes of the whole board (swapping two twins is an automorphism): (class mask, prefix
    # masks by count), for classes of two or more GPUs.
    twins: tuple[tuple[int, tuple[int, ...]], ...] = ()


_matrices: dict[str, _Matrix] = {}
_results: dict[tuple[str, int, int, int, str], Placement | str] = {}
_best_scores: dict[tuple[str, int, int], int | None] = {}


def clear_caches() -> None:
    """Forget every memoised answer (benchmarks measure cold queries with it)."""
    for cache in (_matrices, _results, _best_scores, _partition_memos, _group_scores):
        cache.clear()


def forget_answers() -> None:
    """Forget finished answers but keep per-machine-type work (benchmarks: a new free set on a known type)."""
    _results.clear()


def _matrix(topo: GpuTopology) -> _Matrix:
    m = _matrices.get(topo.fingerprint)
    if m is None:
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
        for cls in _twin_order_rows(w, list(range(len(idx)))):
            if len(cls) > 1:
                prefixes = [sum(1 << p for p in cls[:c]) for c in range(len(cls) + 1)]
                twins.append((sum(1 << p for p in cls), tuple(prefixes)))
        m = _Matrix(idx, tuple(map(tuple, w)), tuple(adj), pos, tuple(twins))
        if len(_matrices) >= _CACHE_LIMIT:
            _matrices.clear()
        _matrices[topo.fingerprint] = m
    return m


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _mask_score(m: _Matrix, positions: Iterable[int]) -> int:
    ps = list(positions)
    w = m.w
    return sum(w[a][b] for i, a in enumerate(ps) for b in ps[i + 1 :])


def set_score(topo: GpuTopology, gpus: Iterable[int]) -> int:
    m = _matrix(topo)
    return _mask_score(m, (m.position[g] for g in gpus))


# -- ideal: branch and bound over twin classes ------------------------------------------------------


def _twin_order(m: _Matrix, free: list[int]) -> list[list[int]]:
    """Free positions grouped into twin classes (identical scores to every other free GPU)."""
    return _twin_order_rows(m.w, free)


def _twin_order_rows(w: list[list[int]] | tuple[tuple[int, ...], ...], free: list[int]) -> list[list[int]]:
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


def _max_sets(m: _Matrix, free_mask: int, k: int, all_ties: bool) -> tuple[int, list[tuple[int, ...]]]:
    """The best score of a k-set within ``free_mask``, and the canonical sets reaching it (all ties,
    or just the first found). Sets are tuples of positions, one representative per twin symmetry."""
    free = _bits(free_mask)
    classes = _twin_order(m, free)
    order = [p for cls in classes for p in cls]
    next_class: list[int] = []
    for cls in classes:
        next_class += [len(next_class) + len(cls)] * len(cls)
    n, w = len(order), m.w
    # top[i][t]: the t largest scores from order[i] to other free GPUs. A set's score counts each pair
    # once from each end at half weight, so twice the score is at most the sum over its members of
    # (2 × gain to the chosen ones + their best r-1 pair scores to anyone).
    top = []
    for p in order:
        row = sorted((w[p][q] for q in free if q != p), reverse=True)
        sums = [0]
        for value in row:
            sums.append(sums[-1] + value)
        top.append(sums)
    best = -1
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


def _best_score(m: _Matrix, fingerprint: str, free_mask: int, k: int) -> int | None:
    if k > free_mask.bit_count():
        return None
    if k <= 1:
        return 0
    key = (fingerprint, free_mask, k)
    if key not in _best_scores:
        if len(_best_scores) >= _CACHE_LIMIT:
            _best_scores.clear()
        _best_scores[key] = _max_sets(m, free_mask, k, all_ties=False)[0]
    return _best_scores[key]


def _largest_island(m: _Matrix, free_mask: int) -> int:
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


def _ideal(m: _Matrix, fingerprint: str, free_mask: int, required_mask: int, k: int) -> tuple[int, ...]:
    w = m.w
    free = _bits(free_mask)
    if k == 1:
        if required_mask:
            return tuple(_bits(required_mask))
        # Worst-connected first: taking it breaks the least; ties go to the lowest index.
        return (min(free, key=lambda p: (sum(w[p][q] for q in free), p)),)
    # Required GPUs: search the rest for k - r GPUs, scoring pairs with the required ones as well.
    req = _bits(required_mask)
    if req:
        rest_mask = free_mask & ~required_mask
        best, best_key = None, None
        for combo in combinations(_bits(rest_mask), k - len(req)):
            chosen = tuple(sorted((*req, *combo)))
            key = _ideal_key(m, fingerprint, free_mask, chosen, k)
            if best_key is None or key > best_key:
                best, best_key = chosen, key
        assert best is not None
        return best
    _, ties = _max_sets(m, free_mask, k, all_ties=True)
    if len(ties) == 1:
        return tuple(sorted(ties[0]))
    return max((tuple(sorted(t)) for t in ties), key=lambda t: _ideal_key(m, fingerprint, free_mask, t, k))


def _ideal_key(m: _Matrix, fingerprint: str, free_mask: int, chosen: tuple[int, ...], k: int) -> tuple[int, ...]:
    left = free_mask
    for p in chosen:
        left &= ~(1 << p)
    leftover = _best_score(m, fingerprint, left, k)
    # Negated positions: among full ties the lowest indices win under max().
    return (
        _mask_score(m, chosen),
        -1 if leftover is None else leftover,
        _largest_island(m, left),
        *(-p for p in chosen),
    )


# -- nvidia-best-effort: exact partition DP in NVIDIA's iteration order ------------------------------


_partition_memos: dict[tuple[str, int, int], dict[tuple[int, bool], int]] = {}
_group_scores: dict[str, dict[int, int]] = {}


def _best_effort(m: _Matrix, fingerprint: str, free_mask: int, required_mask: int, k: int) -> tuple[int, ...]:
    real = _bits(free_mask)
    if k == 1:
        # NVIDIA's k=1 shortcut: each GPU is its own partition; the first that holds the required wins.
        return (real[0],) if not required_mask else tuple(_bits(required_mask))
    big = len(m.indices)  # padding slots sit after every real GPU, as NVIDIA appends them
    w = m.w
    scores = _group_scores.setdefault(fingerprint, {})
    # Sub-results depend only on the GPUs still to group (the padding follows from their count), so
    # every query on the same machine type, k and required set shares them.
    memo = _partition_memos.setdefault((fingerprint, k, required_mask), {})
    # A state's best total is the same for any swap of twin GPUs, so states are memoised in a canonical
    # form (each twin class filled from its lowest member). Required GPUs are never swapped.
    twins = [(cmask, prefixes) for cmask, prefixes in m.twins if not cmask & required_mask]

    def canonical(slots: int) -> int:
        for cmask, prefixes in twins:
            inside = slots & cmask
            if inside:
                slots = (slots & ~cmask) | prefixes[inside.bit_count()]
        return slots

    def group_score(gmask: int) -> int:
        score = scores.get(gmask)
        if score is None:
            ps = _bits(gmask)
            score = sum(w[a][b] for i, a in enumerate(ps) for b in ps[i + 1 :])
            scores[gmask] = score
        return score

    def groups(slots: int, pad_left: bool) -> Iterable[tuple[int, bool]]:
        """Valid groups holding the first slot, in NVIDIA's order: (GPU mask, takes the padding)."""
        members = _bits(slots)
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

    def solve(slots: int, pad_left: bool) -> int:
        """The best partition total of ``slots`` (-1: no valid partition)."""
        if not slots:
            return 0
        key = (canonical(slots), pad_left)
        best = memo.get(key)
        if best is None:
            best = -1
            for gmask, padded in groups(slots, pad_left):
                sub = solve(slots & ~gmask, pad_left and not padded)
                if sub >= 0 and group_score(gmask) + sub > best:
                    best = group_score(gmask) + sub
            memo[key] = best
        return best

    # The partition is rebuilt level by level from the first group (in NVIDIA's order) that reaches
    # the optimum, which is exactly the partition NVIDIA's strict ">" keeps.
    slots, pad_left = free_mask, len(real) % k != 0
    if solve(slots, pad_left) < 0:
        raise PlacementImpossible("no grouping of the free GPUs keeps the required GPUs together")
    best_group, best_score = 0, -1
    while slots:
        target = solve(slots, pad_left)
        for gmask, padded in groups(slots, pad_left):
            rest, rest_pad = slots & ~gmask, pad_left and not padded
            sub = solve(rest, rest_pad)
            if sub >= 0 and group_score(gmask) + sub == target:
                # Fix: NVIDIA may return the padded group, i.e. fewer GPUs than asked for.
                if not padded and gmask & required_mask == required_mask and group_score(gmask) > best_score:
                    best_group, best_score = gmask, group_score(gmask)
                slots, pad_left = rest, rest_pad
                break
    if not best_group:
        raise PlacementImpossible("no unpadded group holds the required GPUs")
    return tuple(_bits(best_group))


# -- the public entry point --------------------------------------------------------------------------


def best_placement(
    topo: GpuTopology,
    k: int,
    free: Iterable[int] | None = None,
    required: Iterable[int] = (),
    policy: Policy = "ideal",
) -> Placement:
    """The set of ``k`` free GPUs the policy picks, or :class:`PlacementImpossible` saying why not.

    ``free`` defaults to every GPU; ``required`` GPUs must be part of the set.
    """
    if policy not in POLICIES:
        raise PlacementImpossible(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    m = _matrix(topo)
    free_list = list(topo.indices) if free is None else list(free)
    free_mask = _mask_of(m, free_list, "free")
    required_list = list(required)
    required_mask = _mask_of(m, required_list, "required")
    key = (topo.fingerprint, free_mask, required_mask, k, policy)
    cached = _results.get(key)
    if cached is None:
        cached = _compute(m, topo.fingerprint, free_mask, required_mask, k, policy)
        if len(_results) >= _CACHE_LIMIT or sum(map(len, _partition_memos.values())) >= 16 * _CACHE_LIMIT:
            _results.clear()
            _partition_memos.clear()
        _results[key] = cached
    if isinstance(cached, str):
        raise PlacementImpossible(cached)
    return cached


def _mask_of(m: _Matrix, gpus: list[int], what: str) -> int:
    mask = 0
    for g in gpus:
        p = m.position.get(g)
        if p is None:
            raise PlacementImpossible(f"{what} GPU {g} is not on this node (GPUs: {', '.join(map(str, m.indices))})")
        mask |= 1 << p
    return mask


def _compute(
    m: _Matrix, fingerprint: str, free_mask: int, required_mask: int, k: int, policy: Policy
) -> Placement | str:
    n_free = free_mask.bit_count()
    if k < 1:
        return f"asked for {k} GPUs; a placement needs at least 1"
    if required_mask & ~free_mask:
        busy = [m.indices[p] for p in _bits(required_mask & ~free_mask)]
        return f"required GPU {', '.join(map(str, busy))} is not free"
    if required_mask.bit_count() > k:
        return f"{required_mask.bit_count()} GPUs are required but only {k} asked for"
    if n_free < k:
        return f"asked for {k} GPUs but only {n_free} of {len(m.indices)} are free"
    try:
        if policy == "ideal":
            chosen = _ideal(m, fingerprint, free_mask, required_mask, k)
        else:
            chosen = _best_effort(m, fingerprint, free_mask, required_mask, k)
    except PlacementImpossible as exc:
        return str(exc)
    taken = 0
    for p in chosen:
        taken |= 1 << p
    return Placement(
        gpus=tuple(m.indices[p] for p in chosen),
        score=_mask_score(m, chosen),
        policy=policy,
        leaves=_leaves(m, fingerprint, free_mask & ~taken),
    )


def _leaves(m: _Matrix, fingerprint: str, left: int) -> Leaves:
    full = (1 << len(m.indices)) - 1
    best: dict[int, int | None] = {}
    quality: dict[int, float] = {}
    for s in FRAGMENTATION_SIZES:
        best[s] = _best_score(m, fingerprint, left, s)
        ideal = _best_score(m, fingerprint, full, s)
        if best[s] is None or ideal is None:
            quality[s] = 0.0
        else:
            quality[s] = 1.0 if ideal == 0 else (best[s] or 0) / ideal
    return Leaves(tuple(m.indices[p] for p in _bits(left)), _largest_island(m, left), best, quality)


def leaves_behind(topo: GpuTopology, free: Iterable[int]) -> Leaves:
    """Fragmentation of a free set as it stands: what requests of 2, 4, 8 GPUs could still get."""
    m = _matrix(topo)
    return _leaves(m, topo.fingerprint, _mask_of(m, list(free), "free"))


def best_set_score(topo: GpuTopology, k: int, free: Iterable[int] | None = None) -> int | None:
    """The best score any k-set of the free GPUs reaches (None: fewer than k free)."""
    m = _matrix(topo)
    mask = (1 << len(m.indices)) - 1 if free is None else _mask_of(m, list(free), "free")
    return _best_score(m, topo.fingerprint, mask, k)


def nvlink_clique(topo: GpuTopology, k: int, free: Iterable[int] | None = None) -> tuple[int, ...] | None:
    """Some k free GPUs joined pairwise by NVLink (the lowest such indices), or None."""
    m = _matrix(topo)
    mask = (1 << len(m.indices)) - 1 if free is None else _mask_of(m, list(free), "free")
    adj = m.nvlink_adj

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
        return (m.indices[_bits(mask)[0]],) if k == 1 and mask else None
    found = grow(0, mask, k)
    return None if found is None else tuple(m.indices[p] for p in _bits(found))


def all_nvlink(topo: GpuTopology, gpus: Iterable[int]) -> bool:
    """Every pair of these GPUs is joined by NVLink."""
    gs = list(gpus)
    return all(topo.link(a, b).nvlinks > 0 for i, a in enumerate(gs) for b in gs[i + 1 :])
