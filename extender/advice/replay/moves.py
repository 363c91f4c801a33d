"""Defragmentation in the replay: a bucket of moves of small pods, spent to rescue a pod or to consolidate.

A budget of B moves per 100 arrivals is a bucket: after arrival i, at most ⌊B × (i + 1) / 100⌋ moves in
all, so a quiet start saves them for the full cluster where they matter. The pods the replay treats as
movable are the single-GPU and share pods (as a Deployment's replicas are); multi-GPU and CPU-only pods
never move. Moves are spent two ways:

- a rescue, when the arriving pod fits on no node: every node is tried, the fewest movable pods whose
  leaving lets the pod fit there (``rescue.clearing``), each given the node where it adds the least
  fragmentation F (FGD's measure, against the trace's typical pods), judged after the moves before it
  (``rescue.destinations``). The rescue with the fewest moves, then the least F added, is made if the
  bucket holds all its moves; the arriving pod is then placed as any pod is (the policy chooses);
- a consolidating move, before an arrival once FILLING of the GPUs are in use: the one move that lowers
  F the most (``consolidate``), one per arrival while the bucket holds one.

A moved pod keeps its GpuClustering tag on the node it left (tags are a set; another pod may share it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from extender.advice.replay.consolidate import consolidating_move
from extender.advice.replay.fragmentation import FragModel
from extender.advice.replay.nodes import NodeState, exclusive_gpus
from extender.advice.replay.rescue import Move, Rescue, Seated, clearing, destinations, unplace
from extender.advice.replay.specs import MILLI, PodShape
from extender.advice.replay.workload import Workload

__all__ = ["DEFRAG_SUFFIX", "MAX_RESCUE_MOVES", "Mover", "movable", "split_defrag"]

DEFRAG_SUFFIX = "+defrag"  # ``advisor+defrag1``: the advisor's policy with 1 move per 100 arrivals
MAX_RESCUE_MOVES = 8  # an 8-GPU pod may want eight single-GPU pods gone; more is never one rescue
# Consolidating moves wait until this share of the GPUs is in use: earlier, arrivals fill the gaps a move
# would close anyway (measured on the default trace, seed 42: from 85 % in use 4.09 % unallocated at 100 %
# arrived, from 90 % 4.07, from 93 % and 95 % 4.05).
FILLING = 0.93
LEAST_GAIN = 0.0  # milli of F a consolidating move must take off
_JUDGED = 32  # nodes whose destinations are worked out per rescue, the cheapest clearings first


class _Candidates:
    """The nodes each moved shape fits now, asked once per shape within one rescue search."""

    def __init__(self, candidates: Callable[[PodShape], Iterable[int]]) -> None:
        self._ask = candidates
        self._known: dict[PodShape, list[int]] = {}

    def of(self, shape: PodShape) -> list[int]:
        found = self._known.get(shape)
        if found is None:
            found = self._known[shape] = list(self._ask(shape))
        return found

    def anywhere(self, shape: PodShape) -> bool:
        return bool(self.of(shape))

    def elsewhere(self, shape: PodShape, source: int) -> bool:
        """Some node but ``source`` takes the shape now (a pod with nowhere to go rules its node out)."""
        return any(node != source for node in self.of(shape))


def split_defrag(name: str) -> tuple[str, int]:
    """``advisor+defrag2`` → ("advisor", 2); a name without the suffix → (name, 0); -1 when unreadable."""
    base, sep, budget = name.partition(DEFRAG_SUFFIX)
    if not sep:
        return name, 0
    return base, int(budget) if budget.isdigit() and int(budget) > 0 else -1


def movable(shape: PodShape) -> bool:
    """A single-GPU or share pod: the replicas a plan may move."""
    return shape.gpu_request > 0 and shape.num_gpu == 1


class Mover:
    """Where every movable pod sits, the bucket of moves, and the search for the rescue to make."""

    def __init__(self, budget: int, nodes: int, frag: FragModel | None) -> None:
        self.budget, self.frag = budget, frag
        self.seated: list[dict[int, Seated]] = [{} for _ in range(nodes)]
        self.moves = 0
        self.given_back = 0  # milli-GPU of whole GPUs that moves left idle (their last pod moved away)
        self._fruitless: set[tuple[PodShape, int]] = set()  # (shape, change count) that found no rescue
        self._holders: dict[PodShape, dict[int, int]] = {}  # shape → node → how many such movable pods

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
            on = self._holders.setdefault(shape, {})
            on[node] = on.get(node, 0) + 1

    def left(self, arrivals: int) -> int:
        """Moves the bucket holds after ``arrivals`` arrivals."""
        return self.budget * arrivals // 100 - self.moves

    def rescue(
        self,
        states: Sequence[NodeState],
        pod: PodShape,
        arrivals: int,
        changes: int,
        candidates: Callable[[PodShape], Iterable[int]],
    ) -> Rescue | None:
        """The fewest moves (within the bucket), then the least F added, after which ``pod`` fits;
        ``candidates(shape)``: the nodes a moved pod fits now. None when no rescue is in reach."""
        limit = min(self.left(arrivals), MAX_RESCUE_MOVES)
        if limit <= 0 or (pod, changes) in self._fruitless:
            return None
        where = _Candidates(candidates)
        can_go = where.anywhere
        nodes = {node for shape, on in self._holders.items() if can_go(shape) for node in on}
        cleared = sorted(
            (len(leaving), node, leaving)
            for node in nodes
            if (leaving := clearing(states[node], self.seated[node], pod, limit, can_go)) is not None
        )
        found: Rescue | None = None
        judged = 0
        for count, node, leaving in cleared:
            if (found is not None and count > len(found.moves)) or judged >= _JUDGED:
                break
            if not all(where.elsewhere(self.seated[node][i][0], node) for i in leaving):
                continue
            judged += 1
            rescue = self._judge(states, node, leaving, where.of)
            if rescue is not None and (found is None or rescue.added < found.added):
                found = rescue
        if found is None:
            self._fruitless.add((pod, changes))
        return found

    def _judge(
        self,
        states: Sequence[NodeState],
        node: int,
        leaving: tuple[int, ...],
        candidates: Callable[[PodShape], Iterable[int]],
    ) -> Rescue | None:
        """The rescue that clears ``leaving`` off ``node``, if every pod finds a node; F added by it all."""
        seated = self.seated[node]
        placed = destinations(states, node, [(i, seated[i][0]) for i in leaving], candidates, self.frag)
        if placed is None:
            return None
        moves, changed = placed
        emptied = states[node]
        for index in leaving:
            emptied = unplace(emptied, *seated[index])
        changed[node] = emptied
        frag = self.frag
        added = sum(frag.node(after) - frag.node(states[n]) for n, after in changed.items()) if frag else 0.0
        return Rescue(node, moves, added)

    def consolidation(
        self,
        states: Sequence[NodeState],
        arrivals: int,
        used: float,
        feasible: Callable[[PodShape], Iterable[int]],
    ) -> tuple[Move, ...]:
        """Once ``used`` (the share of the cluster's GPUs in use) reaches FILLING, the move that lowers F
        the most, while the bucket holds one; none otherwise."""
        if self.frag is None or used < FILLING or self.left(arrivals) <= 0:
            return ()
        move = consolidating_move(states, self.seated, feasible, self.frag, LEAST_GAIN)
        return (move,) if move is not None else ()

    def moved(self, move: Move, emptied: NodeState, target_before: NodeState) -> None:
        """One move was made: the pod sits on the target now; its source reads ``emptied``."""
        _, gpus = self.seated[move.source].pop(move.index)
        self.given_back += MILLI * sum(1 for gpu in gpus if emptied.gpus[gpu] == MILLI)
        on = self._holders[move.shape]
        on[move.source] -= 1
        if not on[move.source]:
            del on[move.source]
        self.seat(move.index, move.target, target_before, move.shape, move.gpu)
        self.moves += 1
        self._fruitless.clear()
