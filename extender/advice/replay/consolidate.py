"""A consolidating move: the one pod move that most reduces the cluster's fragmentation F, as pure functions.

Before the cluster is full, a share alone on a GPU beside a GPU with a gap it fits, or a single-GPU pod
on a node whose other GPUs are busy, strand room that later arrivals cannot use. F (FGD's measure,
against the trace's typical pods) counts exactly that room, node by node; a move changes F on two nodes
only: the source (the pod's GPU gives its milli back) and the target (the pod lands where it leaves the
least sliver). So each pod's move is worth its source's change plus the best target change for its
shape, and the target changes are worked out once per shape (the two best, so that a pod's own node can
be passed over).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from extender.advice.replay.fragmentation import FragModel
from extender.advice.replay.nodes import NodeState, fits
from extender.advice.replay.rescue import Move, Seated, land, unplace
from extender.advice.replay.specs import PodShape

__all__ = ["best_targets", "consolidating_move"]

_Target = tuple[float, int, int]  # (F change on the target, node, GPU)


def best_targets(
    states: Sequence[NodeState], shape: PodShape, nodes: Iterable[int], frag: FragModel
) -> tuple[_Target, ...]:
    """The two nodes among ``nodes`` where the shape adds the least F (ties to the lower index)."""
    found: list[_Target] = []
    for node in nodes:
        state = states[node]
        if not fits(state, shape):
            continue
        gpu, after = land(state, shape)
        found.append((frag.node(after) - frag.node(state), node, gpu))
    found.sort()
    return tuple(found[:2])


def consolidating_move(
    states: Sequence[NodeState],
    seated: Sequence[Mapping[int, Seated]],
    feasible: Callable[[PodShape], Iterable[int]],
    frag: FragModel,
    least_gain: float,
) -> Move | None:
    """The move that lowers F the most, if by more than ``least_gain`` milli; None otherwise.
    ``feasible(shape)``: the nodes the shape fits now."""
    targets: dict[PodShape, tuple[_Target, ...]] = {}
    best: tuple[float, Move] | None = None
    for source, pods in enumerate(seated):
        if not pods:
            continue
        state = states[source]
        here = frag.node(state)
        for index, (shape, gpus) in pods.items():
            options = targets.get(shape)
            if options is None:
                options = targets[shape] = best_targets(states, shape, feasible(shape), frag)
            target = next((t for t in options if t[1] != source), None)
            if target is None:
                continue
            gain = here - frag.node(unplace(state, shape, gpus)) - target[0]
            if gain > least_gain and (best is None or gain > best[0]):
                best = (gain, Move(index, shape, source, target[1], target[2]))
    return best[1] if best is not None else None
