"""The replay loop: every pod once, in order; score every feasible node; max score wins, ties to the
smallest rank (for a policy that breaks ties as the live extender does, ``NamedTies``, the rank is the
node's place in ``ranking.tie_order`` instead of the run's); place; drop the pod when no node fits (no
queue, no retry, no departures; with a budget of moves, a few moves may first make room: ``moves``). A pod
every node it fits holds (``Holding``) waits instead, and is tried again after each later arrival until
its hold limit (``waiting``).

Speed comes from never re-scoring a node that did not change: for each pod shape the engine keeps
the current score of every feasible node in a lazy max-heap, and before using it re-scores only the
nodes placed on since that shape was last seen. Scores are also memoised per (node state, shape),
which is sound because a `Scorer` is a pure function of those two.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from extender.advice.replay.fragmentation import FragTracker
from extender.advice.replay.moves import Mover
from extender.advice.replay.nodes import NodeState, fits, initial_state, place
from extender.advice.replay.rescue import Move, unplace
from extender.advice.replay.run_result import RunResult
from extender.advice.replay.scorer import (
    Holding,
    NamedTies,
    NodePicker,
    Normalising,
    Observer,
    RunContext,
    Scorer,
    gpu_for,
)
from extender.advice.replay.specs import MILLI, ArrivalOrder, NodeSpec, Pod, PodShape
from extender.advice.replay.waiting import ARRIVAL_INTERVAL_S, HeldPods
from extender.advice.replay.workload import Workload
from extender.scoring.ranking import tie_order

_MEMO_LIMIT = 400_000  # entries; dropped wholesale beyond this, to bound memory on long runs


@dataclass(slots=True)
class _View:
    """Feasible nodes' scores for one pod shape, brought up to date lazily from the change log."""

    scores: dict[int, int] = field(default_factory=dict)
    heap: list[tuple[int, int, int, int]] = field(default_factory=list)  # (-score, rank, node, version)
    ranked: list[tuple[int, int]] = field(default_factory=list)  # (rank, node), only for NodePickers
    cursor: int = 0  # position in the change log this view has caught up with


class _Cluster:
    """Mutable replay state: node states, versions, the change log, per-shape views, the memo."""

    def __init__(self, nodes: Sequence[NodeSpec], ranks: Sequence[int], scorer: Scorer) -> None:
        if len(ranks) != len(nodes):
            raise ValueError(f"{len(ranks)} ranks for {len(nodes)} nodes")
        self.states: list[NodeState] = [initial_state(spec) for spec in nodes]
        self.ranks = list(ranks)
        if isinstance(scorer, NamedTies) and scorer.names_break_ties:
            in_tie_order = sorted(range(len(nodes)), key=lambda i: tie_order(nodes[i].name))
            for place_, node in enumerate(in_tie_order):
                self.ranks[node] = place_
        self.versions = [0] * len(nodes)
        self.changed: list[int] = []
        self.views: dict[PodShape, _View] = {}
        self.memo: dict[tuple[NodeState, PodShape], int | None] = {}
        self.scorer = scorer
        self.keep_ranked = isinstance(scorer, NodePicker)

    def forget(self) -> None:
        """Drop every memoised score (the scorer said its scores changed)."""
        self.views.clear()
        self.memo.clear()

    def _score(self, node: int, pod: PodShape) -> int | None:
        key = (self.states[node], pod)
        if key in self.memo:
            return self.memo[key]
        value = self.scorer.score(key[0], pod) if fits(key[0], pod) else None
        if len(self.memo) >= _MEMO_LIMIT:
            self.memo.clear()
        self.memo[key] = value
        return value

    def _rescore(self, view: _View, node: int, pod: PodShape) -> None:
        old = view.scores.pop(node, None)
        new = self._score(node, pod)
        if new is not None:
            view.scores[node] = new
            heapq.heappush(view.heap, (-new, self.ranks[node], node, self.versions[node]))
        if self.keep_ranked and (old is None) != (new is None):
            entry = (self.ranks[node], node)
            if new is None:
                del view.ranked[bisect_left(view.ranked, entry)]
            else:
                insort(view.ranked, entry)

    def view(self, pod: PodShape) -> _View:
        """The up-to-date view for a shape."""
        view = self.views.get(pod)
        if view is None:
            view = _View(cursor=len(self.changed))
            for node in range(len(self.states)):
                self._rescore(view, node, pod)
            self.views[pod] = view
        elif view.cursor < len(self.changed):
            for node in set(self.changed[view.cursor :]):
                self._rescore(view, node, pod)
            view.cursor = len(self.changed)
        if len(view.heap) > 4 * len(view.scores) + 64:  # mostly stale entries: rebuild
            view.heap = [(-s, self.ranks[n], n, self.versions[n]) for n, s in view.scores.items()]
            heapq.heapify(view.heap)
        return view

    def feasible(self, pod: PodShape) -> list[int]:
        """The nodes the pod fits now."""
        return list(self.view(pod).scores)

    def update(self, node: int, state: NodeState) -> None:
        """Record a placement."""
        self.states[node] = state
        self.versions[node] += 1
        self.changed.append(node)


def _winner(cluster: _Cluster, view: _View, pod: PodShape, holding: Holding | None) -> int:
    """The chosen node for the pod of this view, or -1 when none is feasible (or all hold it)."""
    scorer = cluster.scorer
    if not view.scores:
        if isinstance(scorer, NodePicker):
            scorer.missed()
        return -1
    if isinstance(scorer, NodePicker):
        return view.ranked[scorer.pick(len(view.ranked))][1]
    if isinstance(scorer, Normalising) and not scorer.preserves_argmax:
        nodes = list(view.scores)
        normalised = scorer.normalise([view.scores[n] for n in nodes])
        return min(zip(normalised, nodes, strict=True), key=lambda sn: (-sn[0], cluster.ranks[sn[1]]))[1]
    heap = view.heap
    while heap[0][3] != cluster.versions[heap[0][2]]:
        heapq.heappop(heap)
    top = heap[0][2]
    if holding is None or not holding.holds(cluster.states[top], pod):
        return top
    return _unheld(cluster, view, pod, holding)


def _unheld(cluster: _Cluster, view: _View, pod: PodShape, holding: Holding) -> int:
    """The best node that does not hold the pod (the top one did), or -1: a filter that refuses some
    nodes leaves the scheduler the others, in score order."""
    for _, _, node in sorted((-score, cluster.ranks[node], node) for node, score in view.scores.items()):
        if not holding.holds(cluster.states[node], pod):
            return node
    return -1


def replay(
    nodes: Sequence[NodeSpec],
    order: ArrivalOrder,
    scorer: Scorer,
    *,
    original_pods: Sequence[Pod],
    frag_workload: Workload | None = None,
    arrival_interval_s: float = ARRIVAL_INTERVAL_S,
    defrag: int = 0,
) -> RunResult:
    """Replay `order` on an empty cluster with `scorer`; F for the frag series uses `frag_workload`.

    Arrival ``i`` comes at ``i × arrival_interval_s`` seconds: the clock a held pod's limit runs on
    (``waiting``). A pod placed after waiting adds an event where it is placed, arrived unchanged.
    """
    scorer.prepare(RunContext(tuple(nodes), tuple(original_pods), order.seed))
    run = _Run(nodes, order, scorer, frag_workload, defrag)
    held = run.held
    for index, pod in enumerate(order.pods):
        now = index * arrival_interval_s
        if held is not None:
            for late in held.due(now):  # their limit passed before this arrival: no reserve for them
                run.settle(late.index, late.shape, None)
        if run.observer is not None and run.observer.observe(pod):
            run.cluster.forget()
        shape = pod.shape
        run.arrived += shape.gpu_request
        run.arrive(index, shape, now)
        if held is not None:
            run.retry(held, now)
    if held is not None:
        for late in held.due(math.inf):  # time goes on after the last arrival
            run.settle(late.index, late.shape, None)
    return run.result(scorer.name, order.seed)


class _Run:
    """One run's cluster and books: the logs of every event, each pod's node, the held pods."""

    def __init__(
        self, nodes: Sequence[NodeSpec], order: ArrivalOrder, scorer: Scorer, workload: Workload | None, defrag: int
    ) -> None:
        self.cluster = _Cluster(nodes, order.ranks, scorer)
        self.mover = Mover.of(defrag, len(nodes), workload)
        self.frag = FragTracker(self.cluster.states, workload)
        self.observer = scorer if isinstance(scorer, Observer) else None
        self.holding = scorer if isinstance(scorer, Holding) else None
        self.held = HeldPods(self.holding.hold_limit_s) if self.holding is not None else None
        if self.holding is not None:
            self.holding.fleet(self.cluster.states)
        self.arrived = self.used = 0
        self.capacity = sum(spec.gpu_count for spec in nodes) * MILLI
        self.arrived_log: list[int] = []
        self.used_log: list[int] = []
        self.placements = [-1] * len(order.pods)

    def arrive(self, index: int, shape: PodShape, now: float) -> None:
        """An arriving pod: placed, held (every node it fits holds it), or dropped (none fits)."""
        if self.mover is not None and shape.gpu_request:  # once the cluster fills, a move that lowers F
            states, used = self.cluster.states, self.used / self.capacity
            self._make(self.mover, self.mover.consolidation(states, index + 1, used, self.cluster.feasible))
        view = self.cluster.view(shape)
        node = _winner(self.cluster, view, shape, self.holding)
        if node < 0 and not view.scores and self.mover is not None:
            node = self._rescue(self.mover, shape, index + 1)
        if node >= 0:
            self._place(index, shape, node)
        elif self.held is not None and view.scores:
            self.held.hold(index, shape, now)
        if node < 0 and self.holding is not None and shape.gpu_request:
            self.holding.waiting(shape)
        self._record()

    def retry(self, held: HeldPods, now: float) -> None:
        """The cluster changed: every pod held before ``now`` is tried again, oldest first. A shape found
        held is not tried again until some pod is placed (same shape, same cluster: same answer)."""
        blocked: set[PodShape] = set()
        for waiting in held.waiting_since_before(now):
            if waiting.shape in blocked:
                continue
            if self.settle(waiting.index, waiting.shape, self.holding, counted=False):
                held.left(waiting, now)
                blocked.clear()
            else:
                blocked.add(waiting.shape)

    def settle(self, index: int, shape: PodShape, holding: Holding | None, counted: bool = True) -> bool:
        """A waiting pod tried again (``holding`` None: as if no reserve existed); an event if it is
        placed, or when ``counted`` (its last try: placed or dropped). True when placed."""
        node = _winner(self.cluster, self.cluster.view(shape), shape, holding)
        if node >= 0:
            self._place(index, shape, node)
            if self.holding is not None:
                self.holding.resumed(shape)
        if node >= 0 or counted:
            self._record()
        return node >= 0

    def _rescue(self, mover: Mover, shape: PodShape, arrivals: int) -> int:
        """No node fits the pod: a few moves may make room for it (``moves``); its node then, else -1."""
        found = mover.rescue(self.cluster.states, shape, arrivals, len(self.cluster.changed), self.cluster.feasible)
        self._make(mover, found.moves if found is not None else ())
        return _winner(self.cluster, self.cluster.view(shape), shape, self.holding) if found is not None else -1

    def _make(self, mover: Mover, moves: Iterable[Move]) -> None:
        """Moves, in order: each was judged on the cluster after the moves before it."""
        for move in moves:
            source, before = self.cluster.states[move.source], self.cluster.states[move.target]
            emptied = unplace(source, *mover.seated[move.source][move.index])
            self._put(move.source, emptied)
            self._put(move.target, place(before, move.shape, move.gpu))
            mover.moved(move, emptied, before)
            self.placements[move.index] = move.target

    def _place(self, index: int, shape: PodShape, node: int) -> None:
        before = self.cluster.states[node]
        gpu = gpu_for(self.cluster.scorer, before, shape)
        self._put(node, place(before, shape, gpu))
        if self.mover is not None:
            self.mover.seat(index, node, before, shape, gpu)
        self.used += shape.gpu_request
        self.placements[index] = node

    def _put(self, node: int, state: NodeState) -> None:
        self.cluster.update(node, state)
        self.frag.update(node, state)
        if self.holding is not None:
            self.holding.moved(node, state)

    def _record(self) -> None:
        self.arrived_log.append(self.arrived)
        self.used_log.append(self.used)
        self.frag.record()

    def result(self, policy: str, seed: int) -> RunResult:
        waits = tuple(self.held.waits) if self.held is not None else ()
        logs = (tuple(self.arrived_log), tuple(self.used_log), tuple(self.frag.log), tuple(self.placements), waits)
        return RunResult(policy, seed, self.capacity, *logs, *Mover.tally(self.mover))
