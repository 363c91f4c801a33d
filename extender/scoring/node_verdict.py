"""One node's verdict for one pod shape: its plan (placement, or a shared GPU, or CPU only), then its
live headroom, blended into the 0–10 score with the one-line reason; a set that holds a GPU whose
memory something holds is refused, steered or ranked below (``held``). Remembered on the node state."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from extender.cluster.state import NodeState
from extender.placement import Placer
from extender.scoring.formula import blend
from extender.scoring.headroom import headroom
from extender.scoring.held import HELD, held_refusal, ranked_below, steer
from extender.scoring.live import Headroom
from extender.scoring.memo import PlanKey, Shape, keep
from extender.scoring.plan import Plan, plan
from extender.scoring.share_plan import plan_cpu_only, plan_shared
from extender.scoring.stranding import NEUTRAL_LEVEL
from extender.scoring.verdict import Blend, Verdict

__all__ = ["FOREVER", "Headroom", "judged", "keep", "plan_for", "plan_of", "refusal", "verdict_of"]

# Until when a refusal holds: one float for all of them (``float("inf")`` makes a new one at each call,
# and the per-node memos keep one per refusal: 60,000 at 5,000 nodes).
FOREVER = float("inf")


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


def judged(
    node: NodeState,
    name: str,
    shape: Shape,
    found: Plan,
    now: float,
    placer: Placer,
    room_of: Callable[[Plan], Headroom] | None = None,
) -> tuple[Verdict, float]:
    """The verdict of a plan and until when it holds, steered off memory-held GPUs where the policy
    lets the advisor choose the set (``held.steer``); ``room_of``: a plan's headroom (default: the
    full look, ``headroom.headroom``)."""
    if not found.fits:
        return verdict_of(node, name, shape, found, now)[0], FOREVER

    def full(p: Plan) -> Headroom:
        return headroom(node, p.telemetry_gpus, shape.telemetry, shape.policy, now)

    look = room_of or full
    room = look(found)
    if not room[3]:  # no memory-held GPU in the set: nothing to steer around
        return verdict_of(node, name, shape, found, now, room)
    steered = steer(node, shape.plan_key, found, room, placer, look)
    if steered is None:
        return verdict_of(node, name, shape, found, now, room)
    alt, alt_room, around = steered
    # The note on the GPUs passed over is the first look's; the verdict holds while both looks do.
    verdict, until = verdict_of(node, name, shape, alt, now, alt_room, around)
    gpus = "GPUs " + ",".join(map(str, around)) if len(around) > 1 else f"GPU {around[0]}"
    verdict.reason = f"{verdict.reason}; steered around memory-held {gpus}: {room[1]}"
    return verdict, min(until, room[2])


def verdict_of(
    node: NodeState,
    name: str,
    shape: Shape,
    plan: Plan,
    now: float,
    room: Headroom | None = None,
    around: tuple[int, ...] = (),
) -> tuple[Verdict, float]:
    """The verdict and until when it holds; ``room``: the headroom, if already worked out; ``around``:
    the memory-held GPUs the plan was chosen without."""
    if not plan.fits:
        return refusal(name, plan.reason, plan.unresolvable), FOREVER
    value, note, valid_until, held = room or headroom(node, plan.telemetry_gpus, shape.telemetry, shape.policy, now)
    if not plan.components:  # a pod that asks no GPU, on a node that cannot inform its stranding
        return Verdict(name, True, plan.reason, score=0, rank=(NEUTRAL_LEVEL, 0.0)), valid_until
    gpus = plan.gpus or ()
    if held and shape.telemetry is not None:
        refused = held_refusal(node, shape.plan_key, gpus, held, shape.telemetry)
        if refused is not None:  # not for good: the memory may be freed (the verdict is forgotten then)
            return Verdict(name, False, refused, held=held), valid_until
        note = f"{note}; {ranked_below(shape.plan_key, len(gpus))}"
    reason, breakdown, score, rank = _look(plan, shape, value, note, bool(held))
    verdict = Verdict(name, True, reason, score, gpus=plan.gpus, breakdown=breakdown, rank=rank, held=held or around)
    return verdict, valid_until


def _look(plan: Plan, shape: Shape, value: float, note: str, held: bool) -> tuple[str, Mapping[str, float], int, Rank]:
    """(reason, breakdown, score, rank) of a fitting plan with this headroom: worked out once per plan
    and headroom, and shared by the verdicts of every node with that plan (alike nodes share plans:
    ``alike``). At 5,000 nodes a verdict each with its own reason, breakdown and rank was most of the
    memory the standing shapes' tables hold. A plan is made under one policy (its ``PlanKey``), so
    the weights are the same for every shape that reads it."""
    looks = plan.looks
    if looks is None:
        looks = plan.looks = {}
    key = (value, note, held)
    found = looks.get(key)
    if found is None:
        components = Blend(plan.components, value)
        blended = blend(components, shape.weights, shape.total_weight)
        level = float(NEUTRAL_LEVEL if plan.level is None else plan.level)
        rank = (level - HELD if held else level, blended)
        # A few recent headrooms: alike nodes with alike telemetry hit them; where every node's
        # telemetry differs (a real fleet), each entry is one node's and a long list is only garbage.
        if len(looks) >= 8:
            looks.clear()
        found = looks[key] = (_reason(plan.reason, note), components, max(0, min(10, round(10 * blended))), rank)
    return found


_REASONS: dict[tuple[str, str], str] = {}
_REFUSALS: dict[tuple[str, str, bool], Verdict] = {}


def refusal(name: str, reason: str, unresolvable: bool) -> Verdict:
    """The one verdict refusing this node for this reason, whatever the pod shape or the node's state.

    A node refuses most shapes alike: of the 85,000 standing verdicts of a 5,000-node mixed fleet,
    58,500 are refusals and only 18,600 differ in node or reason ("offers nvidia.com/gpu, pod asks for
    amd.com/gpu" for every AMD size). Shared, they are a third of the objects, and the wire fragments
    encoded on a verdict are encoded once for all of them. A refusal's content is its node and its
    reason: nothing changes it once made (a verdict judged with memory-held GPUs is not one of these)."""
    key = (name, reason, unresolvable)
    found = _REFUSALS.get(key)
    if found is None:
        if len(_REFUSALS) >= 65_536:  # a bound, as for the reasons: at worst a refusal made anew
            _REFUSALS.clear()
        found = _REFUSALS[key] = Verdict(name, False, reason, unresolvable=unresolvable)
    return found


def _reason(plan_reason: str, note: str) -> str:
    """A fitting verdict's reason, one string per (plan's reason, headroom note): the note is in whole
    percents, so nodes whose headrooms differ in the digits still share it."""
    key = (plan_reason, note)
    found = _REASONS.get(key)
    if found is None:
        if len(_REASONS) >= 4096:
            _REASONS.clear()
        found = _REASONS[key] = f"{plan_reason}; {note}"
    return found


Rank = tuple[float, float]
