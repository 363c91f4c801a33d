"""Greedy moves that most reduce what the fleet strands, up to a budget.

Each round tries every movable pod once: evict it and place its replacement where the advisor would,
and keeps the one move that takes the most off the fleet's stranded milli (``scoring.fleet_strand``),
when it takes at least ``MIN_GAIN``. Greedy, not optimal: the best pair of moves may start with a
move that helps little alone; a plan is asked before a drain window, so a fast good plan beats a slow
best one. Each round judges the pods on the cluster after the moves before, so the plan is feasible
in its order.
"""

from __future__ import annotations

from extender.advice.defrag.destination import Judge
from extender.advice.defrag.movable import Movable
from extender.advice.defrag.plan import DefragPlan, LeftAlone, Move
from extender.advice.defrag.pod_plan import MAX_STATES, check_budget, step
from extender.advice.defrag.world import World
from extender.scoring.fleet_strand import node_stranding

__all__ = ["MIN_GAIN", "for_fleet"]

MIN_GAIN = 1.0  # milli-GPU: a move that frees less is float noise, not capacity


def for_fleet(world: World, movable: Movable, judge: Judge, budget: int, max_states: int = MAX_STATES) -> DefragPlan:
    """Up to ``budget`` moves, each the one that most reduces the stranded milli; none when none helps."""
    check_budget(budget)
    mix = judge.mix
    per_node = {name: node_stranding(state, mix) for name, state in world.states.items()}
    before = round(sum(per_node.values()), 1)
    left = [LeftAlone(pod=k, why=w) for k, w in movable.left_alone()]
    answer = DefragPlan(
        goal="fleet", found=False, verdict="", budget=budget, moves=[], searched=0, movable=len(movable.keys),
        left_alone=left, stranded_before=before, stranded_after=before,
    )  # fmt: skip
    used: dict[str, int] = {}
    while len(answer.moves) < budget and answer.searched < max_states:
        best = _best_move(world, movable, judge, used, per_node, answer, max_states)
        if best is None:
            break
        move, world, _ = best
        per_node[move.source] = node_stranding(world.states[move.source], mix)
        per_node[move.target] = node_stranding(world.states[move.target], mix)
        move.stranded_after = round(sum(per_node.values()), 1)
        answer.moves.append(move)
        for guard in movable.guards.get(move.pod, ()):
            used[guard] = used.get(guard, 0) + 1
    answer.found = bool(answer.moves)
    answer.stranded_after = answer.moves[-1].stranded_after if answer.moves else before
    answer.verdict = _verdict(answer, movable, mix.pods)
    return answer


def _best_move(
    world: World,
    movable: Movable,
    judge: Judge,
    used: dict[str, int],
    per_node: dict[str, float],
    answer: DefragPlan,
    max_states: int,
) -> tuple[Move, World, float] | None:
    moved = {m.pod for m in answer.moves}
    best: tuple[Move, World, float] | None = None
    for source, held, _ in world.bound():
        if held.key in moved or not movable.within(used, held.key) or answer.searched >= max_states:
            continue
        answer.searched += 1
        made = step(world, held.key, source, judge)
        if made is None:
            continue
        move, after = made
        now = per_node[source] + per_node[move.target]
        then = node_stranding(after.states[source], judge.mix) + node_stranding(after.states[move.target], judge.mix)
        gain = now - then
        if gain >= MIN_GAIN and (best is None or gain > best[2]):
            best = (move, after, gain)
    return best


def _verdict(answer: DefragPlan, movable: Movable, known: tuple[object, ...]) -> str:
    if not movable.keys:
        return f"no plan: no pod may move ({len(movable.left)} GPU pod(s) left alone)"
    if not known:
        return "no plan: the learned mix knows no GPU pod yet, so nothing counts as stranded"
    if not answer.moves:
        return f"no plan: no move of the {len(movable.keys)} movable pod(s) strands less (within {answer.budget})"
    freed = (answer.stranded_before or 0.0) - (answer.stranded_after or 0.0)
    count = f"{len(answer.moves)} move{'s' if len(answer.moves) != 1 else ''}"
    return f"{count} strand {freed:.0f} milli-GPU less: {answer.stranded_before:.0f} → {answer.stranded_after:.0f}"
