"""One replay run's books, event by event: what had arrived, what was in use, F, where each pod went."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RunResult"]


@dataclass(frozen=True, slots=True)
class RunResult:
    """One run: after every pod, cumulative arrived / used milli-GPU and the cluster's F (frag)."""

    policy: str
    seed: int
    capacity: int  # total milli-GPU of the cluster
    arrived: tuple[int, ...]
    used: tuple[int, ...]
    frag: tuple[float, ...]
    placements: tuple[int, ...]  # node index per pod, -1 when dropped
    waits: tuple[float, ...] = ()  # seconds each pod every node held waited, in the order they left
    moves: int = 0  # defragmentation moves made (``moves``)
    given_back: int = 0  # milli-GPU of whole GPUs that moves left idle

    @property
    def dropped(self) -> int:
        """Pods no node could take."""
        return self.placements.count(-1)
