"""Remembered verdicts: the pod shape they answer, and a table per shape of verdicts by node name.

Keys are content, never object ids: a :class:`Shape` is the request, the policy and the telemetry
board with its refresh time; its hash is worked out once, so probing thousands of per-node memos with
it costs no more than with an int.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from extender.model.pods import PodRequest
from extender.model.readings import TelemetryBoard
from extender.scoring.policy import ScoringPolicy
from extender.scoring.verdict import Verdict
from extender.scoring.workload import NO_MIX, Mix

__all__ = ["PlanKey", "Shape", "VerdictMemo"]


class PlanKey:
    """(request, policy, mix version): what a node's telemetry-free plan depends on besides the node."""

    __slots__ = ("_hash", "mix", "policy", "request")

    def __init__(self, request: PodRequest, policy: ScoringPolicy, mix: Mix = NO_MIX) -> None:
        self.request, self.policy, self.mix = request, policy, mix
        self._hash = hash((PlanKey, request, policy, mix.version))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, PlanKey)
            and self.request == other.request
            and self.policy == other.policy
            and self.mix == other.mix
        )


class Shape:
    """What a verdict answers: a request under a policy, against one telemetry board as of a refresh.

    The board is compared as the very board (two boards are two sources of readings); the weights
    are read off the policy once here rather than once per node.
    """

    __slots__ = ("_hash", "plan_key", "refreshed_at", "telemetry", "total_weight", "weights")

    def __init__(self, plan_key: PlanKey, telemetry: TelemetryBoard | None) -> None:
        self.plan_key, self.telemetry = plan_key, telemetry
        self.refreshed_at = telemetry.refreshed_at if telemetry is not None else None
        self.weights = plan_key.policy.weights.as_dict()
        self.total_weight = sum(self.weights.values())
        self._hash = hash((Shape, plan_key, telemetry, self.refreshed_at))

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
            isinstance(other, Shape)
            and self.plan_key == other.plan_key
            and self.telemetry is other.telemetry
            and self.refreshed_at == other.refreshed_at
        )


class VerdictMemo:
    """Verdicts by pod shape and node name, for nodes that have not changed since.

    The owner of a ClusterState subscribes :meth:`forget` to it, so a warm lookup is one dict probe
    per node with no check of the node itself (at 5,000 candidates that is what keeps a call within
    a few milliseconds). A shape's whole table expires at the first moment any reading it used turns
    stale.
    """

    def __init__(self) -> None:
        self._tables: dict[Shape, tuple[dict[str, Verdict], list[float]]] = {}
        self._shapes: dict[tuple[Any, ...], Shape] = {}
        self._plan_keys: dict[tuple[PodRequest, ScoringPolicy, Mix], PlanKey] = {}
        self._lock = threading.Lock()

    def shape(
        self, request: PodRequest, policy: ScoringPolicy, telemetry: TelemetryBoard | None, mix: Mix = NO_MIX
    ) -> Shape:
        """The one Shape object for this content, so per-node probes hit on identity."""
        refreshed_at = telemetry.refreshed_at if telemetry is not None else None
        key = (request, policy, telemetry, refreshed_at, mix)
        found = self._shapes.get(key)
        if found is None:
            if len(self._shapes) > 10_000:
                self._shapes.clear()
                self._plan_keys.clear()
            plan_key = self._plan_keys.get((request, policy, mix))
            if plan_key is None:
                plan_key = self._plan_keys[(request, policy, mix)] = PlanKey(request, policy, mix)
            found = self._shapes[key] = Shape(plan_key, telemetry)
        return found

    def table(self, shape: Shape, now: float) -> dict[str, Verdict]:
        found = self._tables.get(shape)
        if found is None or now >= found[1][0]:
            if len(self._tables) > 256:
                self._tables.clear()
            found = self._tables[shape] = ({}, [float("inf")])
        return found[0]

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
            if found is not None and valid_until < found[1][0]:
                found[1][0] = valid_until

    def forget(self, names: Iterable[str] | None) -> None:
        with self._lock:
            if names is None:
                self._tables.clear()
                return
            for table, _ in list(self._tables.values()):
                for name in names:
                    table.pop(name, None)
