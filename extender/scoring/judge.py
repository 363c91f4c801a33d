"""Filter verdicts and 0–10 node scores for one pod, each with a breakdown and a one-line reason.

A node is judged by the GPU set it would really hand the pod (``plan``: placement), what that leaves
behind, and how busy those GPUs are now (``headroom``); ``formula`` turns those into the score. Without
a topology the set, fragmentation and NUMA terms are neutral (0.5), "scored on counts alone".

Filter rejections name their reason; ``unresolvable`` marks those no preemption or waiting can cure
(the node can never offer what the pod asks), which kube-scheduler then does not retry by preemption.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from extender.cluster.state import NodeState
from extender.model.pods import PodRequest
from extender.model.readings import TelemetryBoard
from extender.placement import Placer
from extender.scoring.formula import node_score
from extender.scoring.headroom import headroom
from extender.scoring.memo import PlanKey, Shape, VerdictMemo
from extender.scoring.plan import Plan, plan
from extender.scoring.policy import ScoringPolicy
from extender.scoring.verdict import Verdict

__all__ = ["evaluate", "judge_all"]

log = logging.getLogger(__name__)
_MEMO_PER_NODE = 64


def judge_all(
    request: PodRequest,
    names: list[str],
    nodes: Mapping[str, NodeState],
    telemetry: TelemetryBoard | None,
    policy: ScoringPolicy,
    now: float,
    memo: VerdictMemo | None = None,
    placer: Placer | None = None,
) -> list[Verdict]:
    """Verdicts for every candidate node of one pod, in order; ``nodes`` maps names to what is known.

    Remembered on each NodeState (a new one on every change) per shape (request, policy, telemetry
    refresh) until the earliest moment one of the readings used turns stale, and in ``memo`` by node
    name: a steady cluster costs a lookup per node. ``placer`` is the placement engine to ask (the
    cluster model's, so nodes of one machine type share its work); without one, a fresh engine.
    """
    if not request.wants_gpu:
        return [Verdict(name, True, "pod asks for no GPU: not judged", score=0) for name in names]
    placer = placer or Placer()
    if memo is not None:
        memo.follow(telemetry, policy, nodes, now)
    shape = memo.shape(request, policy, telemetry) if memo is not None else Shape(PlanKey(request, policy), telemetry)
    known = memo.table(shape, now) if memo is not None else {}
    lookup = nodes.get

    def work_out(name: str) -> Verdict:
        node = lookup(name)
        if node is None:
            log.info("node %s unknown to gpu-advisor: passed unjudged (fail open)", name)
            return Verdict(name, True, "unknown to gpu-advisor (not synced yet?): passed unjudged", score=0)
        verdict, valid_until = _judged(node, name, shape, placer, now)
        if memo is not None:
            memo.remember(shape, known, verdict, valid_until, lambda: lookup(name) is node)
        return verdict

    # The hot path at 5,000 candidates: one probe per node (a Verdict is always truthy).
    recall = known.get
    return [recall(name) or work_out(name) for name in names]


def evaluate(
    request: PodRequest,
    node: NodeState | None,
    name: str,
    telemetry: TelemetryBoard | None,
    policy: ScoringPolicy,
    now: float,
) -> Verdict:
    """The verdict and score of one candidate node for one pod."""
    return judge_all(request, [name], {name: node} if node is not None else {}, telemetry, policy, now)[0]


def _judged(node: NodeState, name: str, shape: Shape, placer: Placer, now: float) -> tuple[Verdict, float]:
    """The node's verdict for this shape and until when it holds, remembered on the node state."""
    hit = node.memo.get(shape)
    if hit is not None and now < hit[1]:
        return hit  # type: ignore[no-any-return]
    found = _judge(node, name, shape, _plan_of(node, shape.plan_key, placer), now)
    if len(node.memo) >= _MEMO_PER_NODE:
        node.memo.clear()
    node.memo[shape] = found
    return found


def _plan_of(node: NodeState, key: PlanKey, placer: Placer) -> Plan:
    found = node.memo.get(key)
    if found is None:
        found = node.memo[key] = plan(node, key.request, key.policy, placer)
    return found


def _judge(node: NodeState, name: str, shape: Shape, plan: Plan, now: float) -> tuple[Verdict, float]:
    if not plan.fits:
        return Verdict(name, False, plan.reason, unresolvable=plan.unresolvable), float("inf")
    value, note, valid_until = headroom(node, plan.telemetry_gpus, shape.telemetry, shape.policy, now)
    components = {**plan.components, "headroom": value}
    score = node_score(components, shape.weights, shape.total_weight)
    return Verdict(name, True, f"{plan.reason}; {note}", score=score, gpus=plan.gpus, breakdown=components), valid_until
