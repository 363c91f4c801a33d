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

from collections.abc import Callable, Iterable
from typing import Any

from extender.cluster.state import NodeState
from extender.model.gpu_use import gpu_use
from extender.model.readings import TelemetryBoard
from extender.scoring.policy import ScoringPolicy

__all__ = ["THRESHOLD", "LiveReadings", "marks"]

THRESHOLD = 0.05
Headroom = tuple[float, str, float, tuple[int, ...]]  # value, note, valid until, memory-held GPUs among them
_NO_READING, _STALE, _ORPHAN = -1.0, -2.0, 10.0
_NO_ORPHANS: dict[int, float] = {}  # shared, never written
_Marks = tuple[
    tuple[float, ...], NodeState, float, dict[int, float], dict[Any, Headroom], dict[int, float], dict[int, str]
]


def marks(
    node: NodeState, board: TelemetryBoard, policy: ScoringPolicy, now: float
) -> tuple[tuple[float, ...], float, dict[int, float]]:
    """(one mark per GPU, the first moment one of its fresh readings turns stale, the headroom of each
    GPU marked as holding VRAM while free by allocation, by index: its mark less 10 is not that float).

    Worked out for every GPU of the fleet at each refresh (40,000 at 5,000 nodes), on the refreshing
    thread but under the interpreter lock that requests need too: so the per-GPU work is inlined."""
    topo = node.topology
    if topo is None:
        return (), float("inf"), _NO_ORPHANS
    found: list[float] = []
    orphans = _NO_ORPHANS
    stale_at = float("inf")
    reading_of, max_age, orphan_share = board.reading, board.max_age_s, policy.orphan_memory_share
    holders, whole = node.holders, node.sharing == "whole GPU"
    name = node.name
    for gpu in topo.gpus:
        reading = reading_of(name, gpu)
        if reading is None:
            found.append(_NO_READING)
            continue
        at = reading.at
        if reading.ended or (at is not None and now - at > max_age):  # board.is_stale, inlined
            found.append(_STALE)
            continue
        if at is not None and at + max_age < stale_at:
            stale_at = at + max_age
        sm, used, free = reading.sm_util, reading.memory_used_mib, reading.memory_free_mib
        mark = _NO_READING
        if sm is not None:
            mark = 1.0 - (100.0 if sm > 100.0 else 0.0 if sm < 0.0 else sm) / 100.0
        if used is not None:
            total = (used + free if free is not None else None) or gpu.memory_mib or node.gpu_memory_mib
            if total:
                used_share = used / total if used < total else 1.0
                room = 1.0 - used_share
                mark = room if mark == _NO_READING or room < mark else mark
                if used_share >= orphan_share and whole and gpu.index not in holders:
                    if orphans is _NO_ORPHANS:
                        orphans = {}
                    orphans[gpu.index] = mark
                    mark += _ORPHAN
        found.append(mark)
    return tuple(found), stale_at, orphans


def _moved(old: tuple[float, ...], new: tuple[float, ...], indices: tuple[int, ...]) -> frozenset[int]:
    """The GPU indices whose marks moved past the threshold."""
    return frozenset(g for g, a, b in zip(indices, old, new, strict=True) if abs(a - b) > THRESHOLD)


class LiveReadings:
    """The marks each node's verdicts were made with, for one board; :meth:`follow` after a refresh.

    Followed in the refresh (the telemetry thread, as the board is installed), so a request only
    looks up: a node's marks are also its per-GPU headroom, which :meth:`headroom` reuses for any
    GPU set, for any pod shape, until the next refresh moves them.
    """

    def __init__(self, board: TelemetryBoard, policy: ScoringPolicy) -> None:
        self.board, self.policy = board, policy
        self.refreshed_at: float | None = board.refreshed_at
        # name → (marks, the node state they were made for, first stale moment, mark by GPU index,
        # headroom by GPU set, the GPUs free by allocation yet holding VRAM, their notes)
        self._marks: dict[str, _Marks] = {}
        self.stale_at = float("inf")  # the first moment a reading some verdict used turns stale
        self.any_stale = False  # some node shows a stale reading, whose age its note must move on

    def follow(self, nodes: Iterable[NodeState], now: float) -> list[tuple[str, frozenset[int] | None]]:
        """Take the board as refreshed now; the nodes whose readings moved past the threshold, each
        with the GPUs that moved (None: all of them; the node is new to this board or changed state
        since)."""
        refreshed_at = self.board.refreshed_at
        moved: list[tuple[str, frozenset[int] | None]] = []
        known = self._marks
        stale_at, any_stale = float("inf"), False
        for node in nodes:
            new, node_stale_at, orphans = marks(node, self.board, self.policy, now)
            stale_at = min(stale_at, node_stale_at)
            any_stale = any_stale or _STALE in new
            old = known.get(node.name)
            topo = node.topology
            gpus: frozenset[int] | None = None
            if old is not None and old[1] is node and topo is not None and len(old[0]) == len(new):
                gpus = _moved(old[0], new, topo.indices)
                if not gpus:
                    continue
            by_index = dict(zip(topo.indices, new, strict=True)) if topo is not None else {}
            if orphans:  # their own headroom, and the GPUs that carry the leftover-process note
                by_index.update(orphans)
            known[node.name] = (new, node, node_stale_at, by_index, {}, orphans, {})
            moved.append((node.name, gpus))
        self.stale_at, self.any_stale = stale_at, any_stale
        self.refreshed_at = refreshed_at
        return moved

    def headroom(self, node: NodeState, gpus: tuple[int, ...], now: float, full: Callable[[], Headroom]) -> Headroom:
        """(value, note, valid until, the memory-held ones among them) of these GPUs, worked out once
        per node per GPU set per refresh that moved it. Every GPU with a fresh reading: straight from
        the marks (the note is the plain "live headroom N%" unless some hold VRAM while free by
        allocation); otherwise ``full()`` (the full look, ``headroom.headroom``)."""
        found = self._marks.get(node.name)
        if found is None or found[1] is not node or not gpus:
            return full()
        hit = found[4].get(gpus)
        if hit is not None and now < hit[2]:
            return hit
        by_index, orphans = found[3], found[5]
        values = [by_index.get(g, _NO_READING) for g in gpus]
        if all(0.0 <= v <= 1.0 for v in values):
            # The same sum, in the same order, as headroom.headroom: the same float, the same note.
            value = sum(values) / len(values)
            held = [g for g in gpus if g in orphans] if orphans else None
            if held:
                hit = (value, self._held_note(node, held), found[2], tuple(held))
            else:
                hit = (value, f"live headroom {value:.0%}", found[2], ())
        else:
            hit = full()
        if len(found[4]) > 64:
            found[4].clear()
        found[4][gpus] = hit
        return hit

    def _held_note(self, node: NodeState, held: list[int]) -> str:
        """headroom.headroom's note for GPUs free by allocation yet holding VRAM, in the set's order;
        each GPU's part worked out once per refresh that moved the node."""
        topo, reading_of, kept = node.topology, self.board.reading, self._marks[node.name][6]
        assert topo is not None  # a node with marks has a topology
        notes = []
        for g in held:
            note = kept.get(g)
            if note is None:
                reading = reading_of(node.name, topo.gpu(g))
                note = kept[g] = "" if reading is None else gpu_use(g, reading, None).text
            if note:
                notes.append(note)
        return "; ".join(notes)
