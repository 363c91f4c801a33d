"""Defragmentation in the replay: when an arriving pod fits nowhere, one move of a small pod may make room.

A budget of B moves per 100 arrivals is a bucket: after arrival i, at most ⌊B × (i + 1) / 100⌋ moves in
all, so a quiet start saves them for the full cluster where they matter. When the arriving pod fits on
no node and the bucket holds a move, every node is tried: one movable pod leaves it (a single-GPU or a
share pod, as a Deployment's replicas are) if the arriving pod then fits there and the moved pod fits on
another node; of those, the move that adds the least fragmentation F (FGD's measure, against the
trace's typical pods) is made, the moved pod going where the policy scores it best among the others.
The arriving pod is then placed as any pod is (the policy chooses, possibly elsewhere).

A moved pod keeps its GpuClustering tag on the node it left (tags are a set; another pod may share it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from extender.advice.replay.fragmentation import FragModel
from extender.advice.replay.nodes import NodeState, exclusive_gpus, fits
from extender.advice.replay.specs import MILLI, PodShape, model_allowed
from extender.advice.replay.workload import Workload

__all__ = ["DEFRAG_SUFFIX", "MovePlan", "Mover", "best_other", "movable", "split_defrag", "unplace"]

DEFRAG_SUFFIX = "+defrag"  # ``advisor+defrag1``: the advisor's policy with 1 move per 100 arrivals

_Seated = tuple[PodShape, tuple[int, ...]]  # a placed pod's shape and the GPUs it took


def split_defrag(name: str) -> tuple[str, int]:
    """``advisor+defrag2`` → ("advisor", 2); a name without the suffix → (name, 0); -1 when unreadable."""
    base, sep, budget = name.partition(DEFRAG_SUFFIX)
    if not sep:
        return name, 0
    return base, int(budget) if budget.isdigit() and int(budget) > 0 else -1


def movable(shape: PodShape) -> bool:
    """A single-GPU or share pod: the replicas a plan may move."""
    return shape.gpu_request > 0 and shape.num_gpu == 1


def unplace(node: NodeState, shape: PodShape, gpus: tuple[int, ...]) -> NodeState:
    """The node after the pod on ``gpus`` left it."""
    back = tuple(free + shape.gpu_milli if index in gpus else free for index, free in enumerate(node.gpus))
    return NodeState(node.model, node.cpu_free + shape.cpu_milli, node.mem_free + shape.memory_mib, back, node.tags)


@dataclass(frozen=True, slots=True)
class MovePlan:
    """One move: pod ``index`` leaves ``source`` (which then reads ``emptied``) for ``target``."""

    index: int
    shape: PodShape
    source: int
    target: int
    emptied: NodeState


class Mover:
    """Where every movable pod sits, the bucket of moves, and the search for the one move to make."""

    def __init__(self, budget: int, nodes: int, frag: FragModel | None) -> None:
        self.budget, self.frag = budget, frag
        self.seated: list[dict[int, _Seated]] = [{} for _ in range(nodes)]
        self.moves = 0
        self.given_back = 0  # milli-GPU of arriving pods placed after a move
        self._fruitless: set[tuple[PodShape, int]] = set()  # (shape, change count) that found no move

    @classmethod
    def of(cls, budget: int, nodes: int, workload: Workload | None) -> Mover | None:
        """A mover for ``budget`` moves per 100 arrivals (None: no moves), weighing F against ``workload``."""
        return cls(budget, nodes, FragModel(workload) if workload is not None else None) if budget > 0 else None

    @staticmethod
    def tally(mover: Mover | None) -> tuple[int, int]:
        """(moves made, milli-GPU given back) for the run's result."""
        return (mover.moves, mover.given_back) if mover is not None else (0, 0)

    def seat(self, index: int, node: int, before: NodeState, shape: PodShape, gpu: int) -> None:
        """Pod ``index`` placed on ``node`` (which read ``before``); whole GPUs are the lowest idle ones."""
        if movable(shape):
            gpus = (gpu,) if shape.is_sharing else exclusive_gpus(before, shape.num_gpu)
            self.seated[node][index] = (shape, gpus)

    def may_move(self, arrivals: int) -> bool:
        return self.moves < self.budget * arrivals // 100

    def plan(
        self, states: Sequence[NodeState], pod: PodShape, changes: int, best: Callable[[PodShape, int], int]
    ) -> MovePlan | None:
        """The least fragmenting move after which ``pod`` fits (``best(shape, source)``: the policy's top node
        for a moved pod other than its source, -1 if none); None when no single move helps."""
        if (pod, changes) in self._fruitless:
            return None
        found: tuple[float, MovePlan] | None = None
        targets: dict[tuple[PodShape, int], int] = {}
        for node, state in enumerate(states):
            if not state.gpus or not model_allowed(state.model, pod.gpu_spec) or not self.seated[node]:
                continue
            for index, (shape, gpus) in self.seated[node].items():
                if not _helps(state, pod, shape, gpus):
                    continue
                emptied = unplace(state, shape, gpus)
                if not fits(emptied, pod):
                    continue
                target = targets.setdefault((shape, node), best(shape, node))
                if target < 0:
                    continue
                cost = self._cost(states, state, emptied, target, shape)
                if found is None or cost < found[0]:
                    found = (cost, MovePlan(index, shape, node, target, emptied))
        if found is None:
            self._fruitless.add((pod, changes))
            return None
        return found[1]

    def _cost(
        self, states: Sequence[NodeState], state: NodeState, emptied: NodeState, target: int, shape: PodShape
    ) -> float:
        """F added by the move: the source's change plus the target's (the moved pod on its best-fit GPU)."""
        if self.frag is None:
            return float(shape.gpu_request)
        there = states[target]
        taken = _best_fit_gpus(there, shape)
        after = tuple(free - shape.gpu_milli if i in taken else free for i, free in enumerate(there.gpus))
        model = self.frag
        source = model.of(emptied.model, emptied.cpu_free, emptied.gpus) - model.node(state)
        return source + model.of(there.model, there.cpu_free - shape.cpu_milli, after) - model.node(there)

    def moved(self, plan: MovePlan, gpu: int, target_before: NodeState) -> None:
        """The move was made: the pod sits on the target now."""
        del self.seated[plan.source][plan.index]
        self.seat(plan.index, plan.target, target_before, plan.shape, gpu)
        self.moves += 1
        self._fruitless.clear()


def best_other(scores: dict[int, int], ranks: Sequence[int], source: int) -> int:
    """The policy's top node for a moved pod among those it fits, its source left out; -1 when none."""
    others = [(-score, ranks[node], node) for node, score in scores.items() if node != source]
    return min(others)[2] if others else -1


def _helps(state: NodeState, pod: PodShape, shape: PodShape, gpus: tuple[int, ...]) -> bool:
    """Cheap test before building the emptied node: the GPU it frees reaches what the pod needs."""
    if state.cpu_free + shape.cpu_milli < pod.cpu_milli or state.mem_free + shape.memory_mib < pod.memory_mib:
        return False
    freed = state.gpus[gpus[0]] + shape.gpu_milli
    if pod.is_sharing:
        return freed >= pod.gpu_milli
    return freed == MILLI and state.gpus.count(MILLI) + 1 >= pod.num_gpu


def _best_fit_gpus(node: NodeState, shape: PodShape) -> tuple[int, ...]:
    if not shape.is_sharing:
        return exclusive_gpus(node, shape.num_gpu)
    fitting = [(free, i) for i, free in enumerate(node.gpus) if free >= shape.gpu_milli]
    return (min(fitting)[1],) if fitting else ()
