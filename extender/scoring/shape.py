"""What a remembered verdict answers: a pod shape (the request, the policy, the learned mix it was judged
against, the telemetry board), with its hash worked out once so that probing thousands of per-node memos
with it costs no more than with an int; and the bounded per-node memo itself (``keep``)."""

from __future__ import annotations

from extender.cluster.state import NodeState
from extender.model.pods import PodRequest
from extender.model.readings import TelemetryBoard
from extender.scoring.policy import ScoringPolicy
from extender.scoring.workload import NO_MIX, Mix

__all__ = ["MEMO_PER_NODE", "PlanKey", "Shape", "keep"]

MEMO_PER_NODE = 32  # remembered items per node state (plans and verdicts), past which it starts afresh


def keep(node: NodeState, key: object, value: object) -> None:
    """Remember ``value`` on this node state under ``key`` (bounded: see MEMO_PER_NODE)."""
    if len(node.memo) >= MEMO_PER_NODE:
        node.memo.clear()
    node.memo[key] = value


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
