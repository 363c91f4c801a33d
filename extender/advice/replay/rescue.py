"""A rescue: the fewest moves after which a pod that fits nowhere fits on some node, as pure functions.

Most pods that fit nowhere want a whole GPU (or several) on a cluster whose free room is slivers beside
shares, so one move rarely makes room: a GPU comes free only when every pod on it leaves. For each node
the pods to move off are chosen first (``clearing``: for a k-GPU pod, the k GPUs with the fewest pods on
them; for a share, the GPU that reaches its milli after the fewest departures, largest first), then each
leaving pod is given a node in turn (``destinations``), judged on the cluster *after the moves before
it*, so the plan is feasible in its order. A node whose GPUs hold a pod that cannot move (a multi-GPU
pod) is cleared on its other GPUs only. Of the nodes cleared with the fewest moves, the rescue that adds
the least fragmentation F wins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from extender.advice.replay.fragmentation import FragModel
from extender.advice.replay.nodes import NodeState, fits, place
from extender.advice.replay.specs import MILLI, PodShape, model_allowed

__all__ = ["Move", "Rescue", "Seated", "clearing", "destinations", "land", "unplace"]

Seated = tuple[PodShape, tuple[int, ...]]  # a placed movable pod's shape and the GPUs it took


@dataclass(frozen=True, slots=True)
class Move:
    """Pod ``index`` leaves ``source`` for ``target``, on GPU ``gpu`` there (-1: whole GPUs, lowest idle)."""

    index: int
    shape: PodShape
    source: int
    target: int
    gpu: int


@dataclass(frozen=True, slots=True)
class Rescue:
    """Moves, in order, after which the pod fits on ``node``; ``added`` is the F they add."""

    node: int
    moves: tuple[Move, ...]
    added: float


def unplace(node: NodeState, shape: PodShape, gpus: tuple[int, ...]) -> NodeState:
    """The node after the pod on ``gpus`` left it."""
    back = tuple(free + shape.gpu_milli if index in gpus else free for index, free in enumerate(node.gpus))
    return NodeState(node.model, node.cpu_free + shape.cpu_milli, node.mem_free + shape.memory_mib, back, node.tags)


def land(node: NodeState, shape: PodShape) -> tuple[int, NodeState]:
    """Where a moved pod sits on ``node``: a share on the fullest GPU it fits (the least sliver left),
    whole GPUs on the lowest idle ones; (GPU, node after)."""
    if not shape.is_sharing:
        return -1, place(node, shape)
    gpu = min((free, i) for i, free in enumerate(node.gpus) if free >= shape.gpu_milli)[1]
    return gpu, place(node, shape, gpu)


def _on_gpu(seated: Mapping[int, Seated], gpu: int) -> list[int]:
    return [index for index, (_, gpus) in seated.items() if gpu in gpus]


def _movable_use(seated: Mapping[int, Seated], pods: Iterable[int]) -> int:
    return sum(seated[i][0].gpu_milli for i in pods)


def _fewest_smallest(seated: Mapping[int, Seated], on: Sequence[int], wanted: int) -> tuple[int, ...]:
    """The fewest of the pods ``on`` a GPU whose milli reach ``wanted``, the smallest such: the largest
    count the fewest, then each of them swapped for the smallest pod that still reaches (small pods find
    somewhere to go where large ones do not)."""
    chosen = sorted(on, key=lambda i: -seated[i][0].gpu_milli)
    count = next(n for n in range(len(chosen) + 1) if _movable_use(seated, chosen[:n]) >= wanted)
    chosen = chosen[:count]
    for place_ in range(count):
        rest = _movable_use(seated, chosen) - seated[chosen[place_]][0].gpu_milli
        for other in sorted(on, key=lambda i: seated[i][0].gpu_milli):
            smaller = seated[other][0].gpu_milli < seated[chosen[place_]][0].gpu_milli
            if other not in chosen and smaller and rest + seated[other][0].gpu_milli >= wanted:
                chosen[place_] = other
                break
    return tuple(chosen)


def clearing(
    state: NodeState, seated: Mapping[int, Seated], pod: PodShape, limit: int, can_go: Callable[[PodShape], bool]
) -> tuple[int, ...] | None:
    """The fewest movable pods (at most ``limit``) whose leaving lets ``pod`` fit on this node; None if
    no such set. Only pods of a shape that ``can_go`` somewhere leave; a GPU that a pod which cannot
    leave shares is cleared only as far as the others allow."""
    if not state.gpus or not model_allowed(state.model, pod.gpu_spec):
        return None
    going = {index: seat for index, seat in seated.items() if can_go(seat[0])}
    if not going:
        return None
    options: list[tuple[int, ...]] = []
    for gpu, free in enumerate(state.gpus):
        on = _on_gpu(going, gpu)
        if free + _movable_use(going, on) < (pod.gpu_milli if pod.is_sharing else MILLI):
            continue  # a pod that cannot leave keeps this GPU from ever reaching what the pod needs
        if pod.is_sharing:
            options.append(_fewest_smallest(going, on, pod.gpu_milli - free))
        else:
            options.append(tuple(on))
    options.sort(key=lambda option: (len(option), _movable_use(going, option)))  # small pods move easiest
    wanted = 1 if pod.is_sharing else pod.num_gpu
    if len(options) < wanted:
        return None
    leaving = tuple(sorted({i for option in options[:wanted] for i in option}))
    if not leaving or len(leaving) > limit:
        return None
    after = state
    for index in leaving:
        after = unplace(after, *seated[index])
    return leaving if fits(after, pod) else None


def destinations(
    states: Sequence[NodeState],
    source: int,
    leaving: Sequence[tuple[int, PodShape]],
    candidates: Callable[[PodShape], Iterable[int]],
    frag: FragModel | None,
) -> tuple[tuple[Move, ...], dict[int, NodeState]] | None:
    """A node for each leaving pod in turn (largest first), the one where it adds the least F, judged on
    the states after the moves before it; the moves and every changed node's state after them, or None
    when some pod fits nowhere but its source. ``candidates(shape)``: the nodes it fits now."""
    changed: dict[int, NodeState] = {}
    moves: list[Move] = []
    for index, shape in sorted(leaving, key=lambda item: -item[1].gpu_request):
        best: tuple[float, int, int, NodeState] | None = None
        for target in candidates(shape):
            if target == source:
                continue
            there = changed.get(target, states[target])
            if not fits(there, shape):
                continue
            gpu, after = land(there, shape)
            cost = _f(frag, after) - _f(frag, there) if frag is not None else float(sum(after.gpus))
            if best is None or (cost, target) < (best[0], best[1]):
                best = (cost, target, gpu, after)
        if best is None:
            return None
        changed[best[1]] = best[3]
        moves.append(Move(index, shape, source, best[1], best[2]))
    return tuple(moves), changed


def _f(frag: FragModel, node: NodeState) -> float:
    return frag.node(node)
