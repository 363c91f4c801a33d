"""Remembered verdicts: the pod shape they answer, and a table per shape of verdicts by node name.

Keys are content, never object ids: a :class:`Shape` is the request, the policy and the telemetry
board; its hash is worked out once, so probing thousands of per-node memos with it costs no more than
with an int. A refresh of the board keeps the shape: it forgets only the nodes whose readings moved
(``live``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from itertools import count
from typing import Any

from extender.cluster.state import NodeState
from extender.model.pods import PodRequest
from extender.model.readings import TelemetryBoard
from extender.scoring.live import LiveReadings
from extender.scoring.policy import ScoringPolicy
from extender.scoring.verdict import Verdict

__all__ = ["PlanKey", "Shape", "VerdictMemo"]


class PlanKey:
    """(request, policy): what a node's telemetry-free plan depends on besides the node itself."""

    __slots__ = ("_hash", "policy", "request")

    def __init__(self, request: PodRequest, policy: ScoringPolicy) -> None:
        self.request, self.policy = request, policy
        self._hash = hash((PlanKey, request, policy))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, PlanKey) and self.request == other.request and self.policy == other.policy
        )


class Shape:
    """What a verdict answers: a request under a policy, against one telemetry board.

    The board is compared as the very board (two boards are two sources of readings); the weights
    are read off the policy once here rather than once per node.
    """

    __slots__ = ("_hash", "plan_key", "telemetry", "total_weight", "weights")

    def __init__(self, plan_key: PlanKey, telemetry: TelemetryBoard | None) -> None:
        self.plan_key, self.telemetry = plan_key, telemetry
        self.weights = plan_key.policy.weights.as_dict()
        self.total_weight = sum(self.weights.values())
        self._hash = hash((Shape, plan_key, telemetry))

    @property
    def request(self) -> PodRequest:
        return self.plan_key.request

    @property
    def policy(self) -> ScoringPolicy:
        return self.plan_key.policy

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, Shape) and self.plan_key == other.plan_key and self.telemetry is other.telemetry
        )


class VerdictMemo:
    """Verdicts by pod shape and node name, for nodes that have not changed since.

    The owner of a ClusterState subscribes :meth:`forget` to it, so a warm lookup is one dict probe
    per node with no check of the node itself (at 5,000 candidates that is what keeps a call within
    a few milliseconds). A shape's whole table expires at the first moment any reading it used turns
    stale. Each table carries a version, new whenever a verdict is added or forgotten, so a caller
    that kept what it made of the table (a whole encoded reply) knows when it may reuse it.
    """

    def __init__(self) -> None:
        # shape → (verdicts by node name, [valid until, version])
        self._tables: dict[Shape, tuple[dict[str, Verdict], list[float]]] = {}
        self._versions = count(1)
        self._live: dict[tuple[TelemetryBoard, ScoringPolicy], LiveReadings] = {}
        self._shapes: dict[tuple[Any, ...], Shape] = {}
        self._plan_keys: dict[tuple[PodRequest, ScoringPolicy], PlanKey] = {}
        self._lock = threading.Lock()

    def shape(self, request: PodRequest, policy: ScoringPolicy, telemetry: TelemetryBoard | None) -> Shape:
        """The one Shape object for this content, so per-node probes hit on identity."""
        key = (request, policy, telemetry)
        found = self._shapes.get(key)
        if found is None:
            if len(self._shapes) > 10_000:
                self._shapes.clear()
                self._plan_keys.clear()
            plan_key = self._plan_keys.get((request, policy))
            if plan_key is None:
                plan_key = self._plan_keys[(request, policy)] = PlanKey(request, policy)
            found = self._shapes[key] = Shape(plan_key, telemetry)
        return found

    def table(self, shape: Shape, now: float) -> dict[str, Verdict]:
        found = self._tables.get(shape)
        if found is None or now >= found[1][0]:
            if len(self._tables) > 256:
                self._tables.clear()
            found = self._tables[shape] = ({}, [float("inf"), next(self._versions)])
        return found[0]

    def version(self, shape: Shape, now: float) -> float | None:
        """The version of the shape's table (None if it has none, it expired, or a telemetry refresh
        has not been followed yet): equal versions, equal verdicts."""
        board = shape.telemetry
        if board is not None:
            live = self._live.get((board, shape.policy))
            if live is None or live.refreshed_at != board.refreshed_at:
                return None
        found = self._tables.get(shape)
        return None if found is None or now >= found[1][0] else found[1][1]

    def follow(
        self, board: TelemetryBoard | None, policy: ScoringPolicy, nodes: Mapping[str, NodeState], now: float
    ) -> None:
        """After a refresh of ``board``, forget the verdicts of the nodes whose readings moved; the
        rest hold until their readings are next refreshed or turn stale. One comparison otherwise."""
        if board is None:
            return
        live = self._live.get((board, policy))
        if live is not None and live.refreshed_at == board.refreshed_at:
            return
        if live is None:
            live = self._live[(board, policy)] = LiveReadings(board, policy)
        moved = live.follow(list(nodes.values()), now)
        for name in moved:
            node = nodes.get(name)
            if node is not None:
                for key in [k for k in node.memo if isinstance(k, Shape)]:
                    node.memo.pop(key, None)
        with self._lock:
            for shape, (table, until_version) in list(self._tables.items()):
                if shape.telemetry is not board:
                    continue
                for name in moved:
                    table.pop(name, None)
                until_version[1] = next(self._versions)
                # Fresh readings for every node kept: they last until the first one turns stale (a
                # stale reading's note counts its age, so then the table keeps its one-second life).
                if not live.any_stale:
                    until_version[0] = live.stale_at

    def remember(
        self,
        shape: Shape,
        table: dict[str, Verdict],
        verdict: Verdict,
        valid_until: float,
        still_current: Callable[[], bool],
    ) -> None:
        """Keep a verdict, unless its node changed while it was being worked out (the change notice
        may already have come and gone; both sides hold the lock)."""
        with self._lock:
            if not still_current():
                return
            table[verdict.node] = verdict
            found = self._tables.get(shape)
            if found is not None:
                found[1][1] = next(self._versions)
                if valid_until < found[1][0]:
                    found[1][0] = valid_until

    def forget(self, names: Iterable[str] | None) -> None:
        with self._lock:
            if names is None:
                self._tables.clear()
                return
            for table, until_version in list(self._tables.values()):
                until_version[1] = next(self._versions)
                for name in names:
                    table.pop(name, None)
