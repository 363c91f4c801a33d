"""The fewest moves that make a pending pod placeable, searched breadth-first up to a budget.

Each move evicts one movable pod from a node the pending pod may use and places its replacement where
the advisor would (``destination``), judged on the cluster after the moves before it; so every plan is
feasible in its order. Breadth-first finds the shortest plan: one move before any pair, and among
plans of one length the first in node, then pod order. Only pods on nodes the pending pod may use are
moved: only room made there can take it (a pod moved off any other node frees room the pod cannot
reach). The search is bounded by ``max_states`` arrangements judged, and says so when it stopped there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.advice.defrag.destination import Judge
from extender.advice.defrag.movable import Movable, pod_key
from extender.advice.defrag.plan import DefragError, DefragPlan, LeftAlone, Move
from extender.advice.defrag.world import World
from extender.cluster.selectors import node_admits
from extender.model.pods import PodRequest, PodSpecError, pod_request

__all__ = ["MAX_STATES", "check_budget", "for_pod", "step"]

MAX_STATES = 2000  # arrangements judged by one search: a plan is asked interactively

_Branch = tuple[World, tuple[Move, ...], dict[str, int]]  # the world, the moves that made it, PDB use


def check_budget(budget: int) -> None:
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise DefragError(f"budget {budget!r}: a plan needs a budget of at least 1 move")


def step(world: World, key: str, source: str, judge: Judge) -> tuple[Move, World] | None:
    """One move: the pod leaves ``source`` and goes where the advisor would place it now; None if nowhere."""
    pod = world.pod(key)
    gone = world.without(key)
    held = next((p for p in world.states[source].pods if p.key == key), None)
    if pod is None or held is None:
        return None
    spec = pod.get("spec") or {}
    verdict = judge.best(held.request, spec, gone.states, skip=source)
    if verdict is None:
        return None
    gpus = list(verdict.gpus) if verdict.gpus is not None else None
    move = Move(pod=key, source=source, target=verdict.node, gpus=gpus, reason=verdict.reason)
    return move, world.moved(key, verdict.node, verdict.gpus)


def _request(pod: Mapping[str, Any]) -> PodRequest:
    try:
        return pod_request(pod)
    except PodSpecError as exc:
        raise DefragError(f"the pending pod: {exc}") from None


def for_pod(
    world: World, pod: Mapping[str, Any], movable: Movable, judge: Judge, budget: int, max_states: int = MAX_STATES
) -> DefragPlan:
    """The shortest plan (≤ ``budget`` moves) after which ``pod`` fits, or why there is none."""
    check_budget(budget)
    request, spec, label = _request(pod), pod.get("spec") or {}, pod_key(pod)
    if not request.wants_gpu:
        raise DefragError(f"{label} asks for no GPU: gpu-advisor has no say in where it goes")
    now = judge.best(request, spec, world.states)
    if now is not None:
        raise DefragError(f"{label} fits already on {now.node}; nothing to move")
    room = {n for n, state in world.states.items() if node_admits(state, spec) is None}
    left = [LeftAlone(pod=k, why=w) for k, w in movable.left_alone()]
    answer = DefragPlan(
        goal=f"pod {label}", found=False, verdict="", budget=budget, moves=[], searched=0,
        movable=len(movable.keys), left_alone=left,
    )  # fmt: skip
    level: list[_Branch] = [(world, (), {})]
    seen = {_signature(())}
    while level and len(level[0][1]) < budget and answer.searched < max_states:
        level = _deeper(level, room, movable, judge, answer, seen, (request, spec), max_states)
        if answer.found:
            return answer
    answer.verdict = _no_plan(answer, budget, request, room, world, movable, max_states)
    return answer


def _deeper(
    level: list[_Branch],
    room: set[str],
    movable: Movable,
    judge: Judge,
    answer: DefragPlan,
    seen: set[object],
    pending: tuple[PodRequest, Mapping[str, Any]],
    max_states: int,
) -> list[_Branch]:
    """Every plan one move longer; stops at the first that places the pod (``answer`` then says so)."""
    request, spec = pending
    out: list[_Branch] = []
    for world, moves, used in level:
        moved = {m.pod for m in moves}
        for source, held, _ in world.bound():
            if source not in room or held.key in moved or not movable.within(used, held.key):
                continue
            if answer.searched >= max_states:
                return out
            answer.searched += 1
            made = step(world, held.key, source, judge)
            if made is None or (sig := _signature((*moves, made[0]))) in seen:
                continue
            seen.add(sig)
            plan, after = (*moves, made[0]), made[1]
            if any(v.fits for v in judge.verdicts(request, spec, {source: after.states[source]})):
                best = judge.best(request, spec, after.states)
                answer.found, answer.moves = True, list(plan)
                answer.placed_on = best.node if best is not None else source
                answer.verdict = _found(plan, answer.placed_on)
                return out
            spent = dict(used)
            for guard in movable.guards.get(held.key, ()):
                spent[guard] = spent.get(guard, 0) + 1
            out.append((after, plan, spent))
    return out


def _signature(moves: tuple[Move, ...]) -> object:
    """Plans that end with the same pods on the same nodes reach the same arrangement."""
    return frozenset((m.pod, m.target) for m in moves)


def _found(moves: tuple[Move, ...], node: str) -> str:
    count = f"{len(moves)} move{'s' if len(moves) != 1 else ''}"
    steps = "; ".join(f"{m.pod} {m.source} → {m.target}" for m in moves)
    return f"placeable on {node} after {count}: {steps}"


def _no_plan(
    answer: DefragPlan,
    budget: int,
    request: PodRequest,
    room: set[str],
    world: World,
    movable: Movable,
    max_states: int,
) -> str:
    on_room = [held.key for node, held, _ in world.bound() if node in room]
    may = [k for k in on_room if k in movable.keys]
    if not may:
        kept = f"{len(on_room)} GPU pod{'s' if len(on_room) != 1 else ''} there, none movable"
        return f"no plan: no pod may move off the {len(room)} node(s) {request.describe()} could use ({kept})"
    why = f"{answer.searched} arrangement(s) judged, none leaves room for {request.describe()}"
    if answer.searched >= max_states:
        why += f" (the search stops at {max_states})"
    return f"no plan within {budget} move(s): {why}; {len(may)} pod(s) there may move"
