"""One node's verdict for one pod shape: its plan (placement, or a shared GPU, or CPU only), then its
live headroom, blended into the 0–10 score with the one-line reason. Remembered on the node state."""

from __future__ import annotations

from extender.cluster.state import NodeState
from extender.placement import Placer
from extender.scoring.formula import blend
from extender.scoring.headroom import headroom
from extender.scoring.live import Headroom
from extender.scoring.memo import PlanKey, Shape, keep
from extender.scoring.plan import Plan, plan
from extender.scoring.share_plan import plan_cpu_only, plan_shared
from extender.scoring.stranding import NEUTRAL_LEVEL
from extender.scoring.verdict import Verdict

__all__ = ["Headroom", "keep", "plan_for", "plan_of", "verdict_of"]


def plan_of(node: NodeState, key: PlanKey, placer: Placer) -> Plan:
    found = node.memo.get(key)
    if found is None:
        found = plan_for(node, key, placer)
        keep(node, key, found)
    return found


def plan_for(node: NodeState, key: PlanKey, placer: Placer) -> Plan:
    request = key.request
    if request.invalid:
        return Plan(False, f"cannot read the pod's GPU share: {request.invalid}", unresolvable=True)
    if request.share is not None:
        return plan_shared(node, request, key.policy, key.mix)
    if not request.wants_gpu:
        return plan_cpu_only(node, request, key.policy, key.mix)
    return plan(node, request, key.policy, placer)


def verdict_of(
    node: NodeState, name: str, shape: Shape, plan: Plan, now: float, room: Headroom | None = None
) -> tuple[Verdict, float]:
    """The verdict and until when it holds; ``room``: the headroom, if already worked out."""
    if not plan.fits:
        return Verdict(name, False, plan.reason, unresolvable=plan.unresolvable), float("inf")
    value, note, valid_until = room or headroom(node, plan.telemetry_gpus, shape.telemetry, shape.policy, now)
    components = {**plan.components, "headroom": value} if plan.components else {}
    if not components:  # a pod that asks no GPU, on a node that cannot inform its stranding
        return Verdict(name, True, plan.reason, score=0, rank=(NEUTRAL_LEVEL, 0.0)), valid_until
    value = blend(components, shape.weights, shape.total_weight)
    score = max(0, min(10, round(10 * value)))
    rank = (float(NEUTRAL_LEVEL if plan.level is None else plan.level), value)
    verdict = Verdict(name, True, f"{plan.reason}; {note}", score, gpus=plan.gpus, breakdown=components, rank=rank)
    return verdict, valid_until
