"""Which nodes a telemetry refresh really changed, so the others keep their remembered verdicts.

Every poll stamps every reading anew; if each refresh made every verdict cold, a 5,000-node call would
cost 60 ms after each poll instead of 1.5 ms. So per node we keep its *marks*, one per GPU: the GPU's
headroom value (min of free SM share and free VRAM share, 0..1), or -1 without a reading, -2 when stale,
plus 10 when it holds VRAM while free by allocation (the leftover-process note). A refresh invalidates a
node's verdicts only when one of its marks moved by more than :data:`THRESHOLD` since they were made:

    THRESHOLD = 0.05   (5 points of SM busy or of VRAM used; with the default headroom weight .15
                        that is at most 0.075 of a score point on the 0–10 scale)

Smaller moves keep the verdict, its score and its note ("live headroom 73%") as they were.
"""

from __future__ import annotations

from collections.abc import Iterable

from extender.cluster.state import NodeState
from extender.model.readings import TelemetryBoard
from extender.scoring.policy import ScoringPolicy

__all__ = ["THRESHOLD", "LiveReadings", "marks"]

THRESHOLD = 0.05
_NO_READING, _STALE, _ORPHAN = -1.0, -2.0, 10.0


def marks(node: NodeState, board: TelemetryBoard, policy: ScoringPolicy, now: float) -> tuple[tuple[float, ...], float]:
    """(one mark per GPU, the first moment one of its fresh readings turns stale)."""
    topo = node.topology
    if topo is None:
        return (), float("inf")
    found: list[float] = []
    stale_at = float("inf")
    for gpu in topo.gpus:
        reading = board.reading(node.name, gpu)
        if reading is None:
            found.append(_NO_READING)
            continue
        if board.is_stale(reading, now):
            found.append(_STALE)
            continue
        if reading.at is not None:
            stale_at = min(stale_at, reading.at + board.max_age_s)
        parts = [] if reading.sm_util is None else [1.0 - min(100.0, max(0.0, reading.sm_util)) / 100.0]
        total = reading.memory_total_mib or gpu.memory_mib or node.gpu_memory_mib
        orphan = 0.0
        if reading.memory_used_mib is not None and total:
            used_share = min(1.0, reading.memory_used_mib / total)
            parts.append(1.0 - used_share)
            if used_share >= policy.orphan_memory_share and gpu.index not in node.holders and not node.time_sliced:
                orphan = _ORPHAN
        found.append((min(parts) if parts else _NO_READING) + orphan)
    return tuple(found), stale_at


def _moved(old: tuple[float, ...], new: tuple[float, ...]) -> bool:
    return len(old) != len(new) or any(abs(a - b) > THRESHOLD for a, b in zip(old, new, strict=True))


class LiveReadings:
    """The marks each node's verdicts were made with, for one board; :meth:`follow` after a refresh."""

    def __init__(self, board: TelemetryBoard, policy: ScoringPolicy) -> None:
        self.board, self.policy = board, policy
        self.refreshed_at: float | None = board.refreshed_at
        self._marks: dict[str, tuple[tuple[float, ...], NodeState]] = {}
        self.stale_at = float("inf")  # the first moment a reading some verdict used turns stale
        self.any_stale = False  # some node shows a stale reading, whose age its note must move on

    def follow(self, nodes: Iterable[NodeState], now: float) -> list[str]:
        """Take the board as refreshed now; the names of the nodes whose readings moved past the
        threshold (or that are new to this board, or changed state since)."""
        self.refreshed_at = self.board.refreshed_at
        moved: list[str] = []
        known = self._marks
        stale_at, any_stale = float("inf"), False
        for node in nodes:
            new, node_stale_at = marks(node, self.board, self.policy, now)
            stale_at = min(stale_at, node_stale_at)
            any_stale = any_stale or _STALE in new
            old = known.get(node.name)
            if old is None or old[1] is not node or _moved(old[0], new):
                known[node.name] = (new, node)
                moved.append(node.name)
        self.stale_at, self.any_stale = stale_at, any_stale
        return moved
