"""What a remembered verdict answers: a pod shape (the request, the policy, the learned mix it was judged
against, the telemetry board), with its hash worked out once so that probing thousands of per-node memos
with it costs no more than with an int; and the bounded per-node memo itself (``keep``)."""

from __future__ import annotations

from extender.cluster.state import NodeState
from extender.model.pods import PodRequest
from extender.model.readings import TelemetryBoard
from extender.scoring.policy import ScoringPolicy
from extender.scoring.verdict import Verdict
from extender.scoring.workload import NO_MIX, Mix

__all__ = ["AVOIDING", "MEMO_PER_NODE", "PlanKey", "Shape", "forget_moved_on", "keep", "used", "worth_keeping"]

MEMO_PER_NODE = 32  # remembered items per node state (plans and verdicts), past which it starts afresh
# The first part of a node.memo key under which a plan chosen without some memory-held GPUs is kept
# (``held.steer``): which GPUs are held moves with the readings, so a refresh that moves the node's
# readings drops them (``memo``), or a fleet whose held GPUs come and go keeps every set it ever saw.
AVOIDING = "avoid held GPUs"


def worth_keeping(verdict: Verdict) -> bool:
    """Is this verdict worth a place on its node state? A refusal is one object per node and reason,
    shared by every shape refused alike, and found again in a few lookups (``node_verdict.refusal``):
    kept per node and shape, the standing shapes' refusals were 58,000 pairs at 5,000 nodes of a
    mixed fleet. One judged with a memory-held GPU is its own (``held``), and kept."""
    return verdict.fits or bool(verdict.held)


def used(verdict: Verdict, moved: frozenset[int] | None) -> bool:
    """Did this verdict read telemetry of these GPUs (None: of any)? A set it hands out is what its
    headroom reads; a time-sliced node's verdict names no set and reads them all; the memory-held
    GPUs it was judged with (``held``: refused for, or steered around) were read too."""
    if verdict.held and (moved is None or not moved.isdisjoint(verdict.held)):
        return True
    if not verdict.fits:
        return False
    return moved is None or verdict.gpus is None or not moved.isdisjoint(verdict.gpus)


def forget_moved_on(node: NodeState, gpus: frozenset[int] | None) -> None:
    """After a refresh moved these GPUs' readings (None: all), drop from the node's memo the verdicts
    that read them and every plan steered around held GPUs."""
    memo = node.memo
    for k in list(memo):
        hit = memo.get(k)
        if (isinstance(k, Shape) and hit is not None and used(hit[0], gpus)) or (
            type(k) is tuple and k and k[0] is AVOIDING
        ):
            memo.pop(k, None)


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
