"""What a sweep of runs returns: each run binned into curves, keyed by (policy, seed)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Curve", "RunCurves", "Sweep"]

Curve = tuple[float | None, ...]  # one value per X = 0..130 % arrived; None where no event fell near X


@dataclass(frozen=True, slots=True)
class RunCurves:
    """One run, binned: allocated and fragmented GPU as % of capacity at X = 0..130 % arrived."""

    policy: str
    seed: int
    alloc: Curve
    frag: Curve
    dropped: int  # pods no node could take
    seconds: float  # wall time of the replay itself
    waits: tuple[float, ...] = ()  # seconds each pod that every node held waited
    moves: int = 0  # defragmentation moves made (``moves``)
    given_back: int = 0  # milli-GPU of whole GPUs that moves left idle


@dataclass(frozen=True, slots=True)
class Sweep:
    """Every (policy, seed) run of one workset, in the order asked for."""

    trace: str
    policies: tuple[str, ...]
    seeds: tuple[int, ...]
    runs: Mapping[tuple[str, int], RunCurves]

    def curves(self, policy: str) -> list[RunCurves]:
        """A policy's runs in seed order."""
        return [self.runs[(policy, seed)] for seed in self.seeds]
