"""What placement answers about one node for one request: the set, its score, and what it costs."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from extender.placement.leaves import Leaves, leaves_of
from extender.placement.matrix import PlacementImpossible
from extender.placement.wiring import Wiring

__all__ = ["Assessment", "Placement", "PolicyName"]

PolicyName = Literal["ideal", "nvidia-best-effort"]


@dataclass(frozen=True)
class Placement:
    gpus: tuple[int, ...]
    score: int
    policy: PolicyName
    leaves: Leaves

    def to_dict(self) -> dict[str, object]:
        return {"gpus": list(self.gpus), "score": self.score, "policy": self.policy, "leaves": self.leaves.to_dict()}


@dataclass(frozen=True)
class Assessment:
    """One trip down for one node: everything scoring asks of placement for a request of ``k`` GPUs.

    ``placement`` is the set the policy picks (None, with ``problem`` saying why, when there is none);
    ``nvlink_share`` is the share of the chosen set's pairs joined by NVLink (1.0 for a single GPU).
    What costs a search of its own (``best_possible``, ``before``) is worked out on first use. The
    NVLink cliques are filled only when asked for: some k GPUs joined pairwise by NVLink on the whole
    node, and among the free ones.
    """

    k: int
    placement: Placement | None
    problem: str | None
    nvlink_share: float
    node_clique: tuple[int, ...] | None = None
    free_clique: tuple[int, ...] | None = None
    _wiring: Wiring = field(repr=False, compare=False, kw_only=True)
    _free_mask: int = field(repr=False, compare=False, kw_only=True)

    def placed(self) -> Placement:
        """The placement, or :class:`PlacementImpossible` saying why there is none."""
        if self.placement is None:
            raise PlacementImpossible(self.problem or "no placement")
        return self.placement

    @property
    def all_nvlink(self) -> bool:
        """Every pair of the chosen GPUs is joined by NVLink."""
        return self.placement is not None and self.nvlink_share == 1.0

    @cached_property
    def best_possible(self) -> int | None:
        """The best score any k GPUs of the whole, empty node reach (None: the node has fewer)."""
        return self._wiring.best_score(self._wiring.matrix.full, self.k)

    @cached_property
    def before(self) -> Leaves:
        """The fragmentation of the free set as it stands, before this placement (worked out on demand)."""
        return leaves_of(self._wiring, self._free_mask)
