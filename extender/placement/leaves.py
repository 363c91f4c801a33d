"""What the free GPUs can still do after a placement: the fragmentation it causes."""

from __future__ import annotations

from dataclasses import dataclass, field

from extender.placement.matrix import largest_island
from extender.placement.wiring import Wiring

__all__ = ["FRAGMENTATION_SIZES", "Leaves", "leaves_of"]

FRAGMENTATION_SIZES = (2, 4, 8)


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


def leaves_of(wiring: Wiring, left: int) -> Leaves:
    """The fragmentation of the free mask ``left``: what requests of 2, 4, 8 GPUs could still get."""
    found: Leaves | None = wiring.leaves.get(left)
    if found is not None:
        return found
    m = wiring.matrix
    best: dict[int, int | None] = {}
    quality: dict[int, float] = {}
    for s in FRAGMENTATION_SIZES:
        best[s] = wiring.best_score(left, s)
        ideal = wiring.best_score(m.full, s)
        if best[s] is None or ideal is None:
            quality[s] = 0.0
        else:
            quality[s] = 1.0 if ideal == 0 else (best[s] or 0) / ideal
    found = wiring.leaves[left] = Leaves(m.gpus_of(left), largest_island(m, left), best, quality)
    return found
