"""The placement engine: one :class:`Wiring` per topology fingerprint, and ``assess`` on top.

Answers are kept by (fingerprint, free mask, required mask, k, policy): thousands of nodes of a few
machine types cost one computation each. Whoever holds the engine owns that memory (the cluster
model holds one); a fresh engine starts from nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from extender.model.topology import GpuTopology
from extender.placement.assessment import Assessment, Placement, PolicyName
from extender.placement.best_effort import NvidiaBestEffort
from extender.placement.bounded import MAX_GPUS
from extender.placement.ideal import Ideal
from extender.placement.leaves import FRAGMENTATION_SIZES, leaves_of
from extender.placement.matrix import PlacementImpossible, bits, nvlink_clique_mask
from extender.placement.table import Table
from extender.placement.wiring import Wiring

__all__ = ["POLICIES", "Placer", "Policy"]

_WIRING_LIMIT = 4096


class Policy(Protocol):
    """A way to choose k of the free GPUs. Positions and masks are over the wiring's sorted indices;
    the masks are valid (required ⊆ free, 1 ≤ k ≤ free); :class:`PlacementImpossible` says why not."""

    @property
    def name(self) -> PolicyName: ...

    def choose(self, wiring: Wiring, free_mask: int, required_mask: int, k: int) -> tuple[int, ...]: ...


POLICIES: Mapping[PolicyName, Policy] = {"ideal": Ideal(), "nvidia-best-effort": NvidiaBestEffort()}


class Placer:
    """Placement answers, remembered per wiring."""

    def __init__(self, tables: bool = True, compiled: bool = True) -> None:
        """``tables``: answer from tables built at first sight of each machine type (a few ms each; up
        to 8 GPUs in Python, 9-16 by the compiled kernel); a one-shot question is cheaper searched.
        ``compiled``: off, 9-16 GPU boards are searched in Python even where the kernel is built."""
        self._wirings: dict[str, Wiring] = {}
        self._tables = tables
        self._compiled = compiled

    def wiring(self, topo: GpuTopology) -> Wiring:
        found = self._wirings.get(topo.fingerprint)
        if found is None:
            if len(self._wirings) >= _WIRING_LIMIT:
                self._wirings.clear()
            found = self._wirings[topo.fingerprint] = Wiring(topo, self._tables, self._compiled)
            if found.table is not None:
                for mask in range(found.matrix.full + 1):
                    leaves_of(found, mask)  # what every free set leaves, with the table: lookups from here on
                found.tabled.update(_every_answer(found))
                found.answers.update(found.tabled)
            if found.subsets is not None:
                found.subsets.prepare(FRAGMENTATION_SIZES)  # what every answer's leaves look up
        return found

    def forget_answers(self) -> None:
        """Forget finished answers but keep per-wiring work (benchmarks: a new free set on a known type)."""
        for wiring in self._wirings.values():
            wiring.forget_answers()

    def assess(
        self,
        topo: GpuTopology,
        k: int,
        free: Iterable[int] | None = None,
        policy: PolicyName = "ideal",
        required: Iterable[int] = (),
        cliques: bool = False,
    ) -> Assessment:
        """Everything about placing ``k`` GPUs on this node in one trip (see :class:`Assessment`).

        ``free`` defaults to every GPU; ``required`` GPUs must be part of the set; ``cliques`` asks for
        the NVLink cliques too. An unknown policy or a GPU not on the board is
        :class:`PlacementImpossible`; a request no set can meet is an assessment without a placement.
        """
        if policy not in POLICIES:
            raise PlacementImpossible(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
        # The cached path of every node of a known type: kept to a few dict lookups.
        wiring = self._wirings.get(topo.fingerprint) or self.wiring(topo)
        m = wiring.matrix
        free_mask = m.full if free is None else m.mask_of(free, "free")
        required_mask = m.mask_of(required, "required") if required else 0
        key = (free_mask, required_mask, k, policy, cliques)
        found: Assessment | None = wiring.answers.get(key)
        if found is None:
            found = _assess(wiring, free_mask, required_mask, k, policy, cliques)
            wiring.remember(key, found)
        return found

    def best_placement(
        self,
        topo: GpuTopology,
        k: int,
        free: Iterable[int] | None = None,
        required: Iterable[int] = (),
        policy: PolicyName = "ideal",
    ) -> Placement:
        """The set of ``k`` free GPUs the policy picks, or :class:`PlacementImpossible` saying why not."""
        return self.assess(topo, k, free, policy, required).placed()


def _assess(
    wiring: Wiring, free_mask: int, required_mask: int, k: int, policy: PolicyName, cliques: bool
) -> Assessment:
    m = wiring.matrix
    problem = _why_not(wiring, free_mask, required_mask, k)
    placement, share = None, 1.0
    if problem is None and wiring.table is not None and not required_mask:
        placement, share = _looked_up(wiring, wiring.table, free_mask, k, policy)
    elif problem is None:
        try:
            chosen = POLICIES[policy].choose(wiring, free_mask, required_mask, k)
        except PlacementImpossible as exc:
            problem = str(exc)
        else:
            taken = sum(1 << p for p in chosen)
            placement = Placement(m.gpus_of(taken), m.score(chosen), policy, leaves_of(wiring, free_mask & ~taken))
            share = _nvlink_share(wiring, chosen)
    node_clique = free_clique = None
    if cliques:
        node_clique = _clique(wiring, m.full, k)
        free_clique = _clique(wiring, free_mask, k)
    return Assessment(k, placement, problem, share, node_clique, free_clique, _wiring=wiring, _free_mask=free_mask)


def _every_answer(wiring: Wiring) -> dict[tuple[int, int, int, str, bool], Assessment]:
    """Both policies' assessments for every free set and size of a tabled board (2 × 1,024 at 8 GPUs)."""
    return {
        (free, 0, k, policy, False): _assess(wiring, free, 0, k, policy, False)
        for policy in POLICIES
        for free in range(1, wiring.matrix.full + 1)
        for k in range(1, free.bit_count() + 1)
    }


def _looked_up(wiring: Wiring, table: Table, free_mask: int, k: int, policy: PolicyName) -> tuple[Placement, float]:
    """The answer from the machine type's table: a few lookups, no search."""
    taken = table.choices[policy][k][free_mask]
    placement = Placement(table.gpus[taken], table.score[taken], policy, leaves_of(wiring, free_mask & ~taken))
    return placement, table.nvlink_share[taken]


def _nvlink_share(wiring: Wiring, chosen: tuple[int, ...]) -> float:
    """The share of the set's pairs joined by NVLink (1.0 for a single GPU)."""
    adj = wiring.matrix.nvlink_adj
    pairs = [(a, b) for i, a in enumerate(chosen) for b in chosen[i + 1 :]]
    return sum(1 for a, b in pairs if adj[a] >> b & 1) / len(pairs) if pairs else 1.0


def _clique(wiring: Wiring, mask: int, k: int) -> tuple[int, ...] | None:
    found = nvlink_clique_mask(wiring.matrix.nvlink_adj, mask, k)
    return None if found is None else wiring.matrix.gpus_of(found)


def _why_not(wiring: Wiring, free_mask: int, required_mask: int, k: int) -> str | None:
    """Why no k-set can exist at all, in one line; None when the policy may try."""
    m = wiring.matrix
    n_free = free_mask.bit_count()
    if len(m.indices) > MAX_GPUS:
        return f"this node has {len(m.indices)} GPUs; placement handles at most {MAX_GPUS} GPUs per node"
    if k < 1:
        return f"asked for {k} GPUs; a placement needs at least 1"
    if required_mask & ~free_mask:
        busy = [m.indices[p] for p in bits(required_mask & ~free_mask)]
        return f"required GPU {', '.join(map(str, busy))} is not free"
    if required_mask.bit_count() > k:
        return f"{required_mask.bit_count()} GPUs are required but only {k} asked for"
    if n_free < k:
        return f"asked for {k} GPUs but only {n_free} of {len(m.indices)} are free"
    return None
