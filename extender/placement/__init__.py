"""The GPU set a node will hand a pod, and what that leaves behind. Pure: no I/O, web or Kubernetes.

Pair score (NVIDIA's best-effort weights, so our prediction agrees with the device plugin's
``GetPreferredAllocation``)::

    PCIe level: SYS 10, NODE 20, PHB 30, PXB 40, PIX 50, INTERNAL 60, unknown 0;  plus 100 per NVLink
    set score = sum of the pair scores over every pair in the set

A :class:`Policy` chooses a set of k among the free GPUs, one file each: ``nvidia-best-effort``
(``best_effort.py``: what NVIDIA's allocator picks, computed exactly) and ``ideal`` (``ideal.py``:
the highest-scoring set, ties broken by what it leaves). Both are exact for up to 16 free GPUs; past
that a bounded search answers (``bounded.py``: greedy plus swaps, with a measured gap), and a node of
more than 64 GPUs is refused. Boards of up to 8 GPUs are answered from a table built once per machine
type (``table.py``); boards of 9 to 16 from per-mask tables built by a small compiled kernel
(``subsets.py``, ``_kernel.c``), or, where pip found no C compiler, by the same rules searched in Python.

:meth:`Placer.assess` answers everything scoring asks of one node in one trip (an
:class:`Assessment`). A :class:`Placer` keeps one :class:`Wiring` (matrix and memos) per topology
fingerprint, so thousands of nodes of a few machine types cost one computation each; the module-level
functions below are one-shot conveniences on a fresh engine.
"""

from __future__ import annotations

from collections.abc import Iterable

from extender.model.topology import GpuTopology
from extender.placement.assessment import Assessment, Placement, PolicyName
from extender.placement.engine import POLICIES, Placer, Policy
from extender.placement.leaves import FRAGMENTATION_SIZES, Leaves, leaves_of
from extender.placement.matrix import (
    NVLINK_SCORE,
    PCIE_SCORE,
    PlacementImpossible,
    bits,
    matrix_of,
    nvlink_clique_mask,
    pair_score,
)
from extender.placement.wiring import Wiring

__all__ = [
    "FRAGMENTATION_SIZES",
    "NVLINK_SCORE",
    "PCIE_SCORE",
    "POLICIES",
    "Assessment",
    "Leaves",
    "Placement",
    "PlacementImpossible",
    "Placer",
    "Policy",
    "PolicyName",
    "Wiring",
    "assess",
    "best_placement",
    "leaves_behind",
    "nvlink_clique",
    "pair_score",
    "set_score",
]


def assess(
    topo: GpuTopology,
    k: int,
    free: Iterable[int] | None = None,
    policy: PolicyName = "ideal",
    required: Iterable[int] = (),
    cliques: bool = False,
) -> Assessment:
    """One-shot :meth:`Placer.assess` (nothing is remembered between calls)."""
    return Placer(tables=False).assess(topo, k, free, policy, required, cliques)


def best_placement(
    topo: GpuTopology,
    k: int,
    free: Iterable[int] | None = None,
    required: Iterable[int] = (),
    policy: PolicyName = "ideal",
) -> Placement:
    """The set of ``k`` free GPUs the policy picks, or :class:`PlacementImpossible` saying why not.

    ``free`` defaults to every GPU; ``required`` GPUs must be part of the set.
    """
    return Placer(tables=False).best_placement(topo, k, free, required, policy)


def leaves_behind(topo: GpuTopology, free: Iterable[int]) -> Leaves:
    """Fragmentation of a free set as it stands: what requests of 2, 4, 8 GPUs could still get."""
    wiring = Wiring(topo, tables=False)
    return leaves_of(wiring, wiring.matrix.mask_of(free, "free"))


def set_score(topo: GpuTopology, gpus: Iterable[int]) -> int:
    m = matrix_of(topo)
    return m.score(m.position[g] for g in gpus)


def nvlink_clique(topo: GpuTopology, k: int, free: Iterable[int] | None = None) -> tuple[int, ...] | None:
    """Some k free GPUs joined pairwise by NVLink (the lowest such indices), or None."""
    # Adjacency alone, without a whole matrix: the admission rules ask this of every node per review.
    idx = topo.indices
    pos = {g: p for p, g in enumerate(idx)}
    adj = [0] * len(idx)
    for link in topo.links:
        if link.nvlinks:
            adj[pos[link.a]] |= 1 << pos[link.b]
            adj[pos[link.b]] |= 1 << pos[link.a]
    if free is None:
        mask = (1 << len(idx)) - 1
    else:
        mask = 0
        for g in free:
            if g not in pos:
                raise PlacementImpossible(f"free GPU {g} is not on this node (GPUs: {', '.join(map(str, idx))})")
            mask |= 1 << pos[g]
    found = nvlink_clique_mask(adj, mask, k)
    return None if found is None else tuple(idx[p] for p in bits(found))
