"""Remembered verdicts: the pod shape they answer, and a table per shape of verdicts by node name.

Keys are content, never object ids: a :class:`Shape` is the request, the policy and the telemetry
board; its hash is worked out once, so probing thousands of per-node memos with it costs no more than
with an int. A refresh of the board keeps the shape: it forgets only the nodes whose readings moved."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping
from itertools import compress, count
from operator import and_, attrgetter, is_
from typing import Any

from extender.cluster.state import NodeState
from extender.model.pods import PodRequest
from extender.model.readings import TelemetryBoard
from extender.scoring.live import LiveReadings
from extender.scoring.plan import as_planned
from extender.scoring.policy import ScoringPolicy
from extender.scoring.shape import MEMO_PER_NODE, PlanKey, Shape, forget_moved_on, keep, used, worth_keeping
from extender.scoring.verdict import Verdict
from extender.scoring.workload import NO_MIX, Mix

__all__ = ["MEMO_PER_NODE", "MEMO_TABLES", "PlanKey", "Shape", "VerdictMemo", "keep", "worth_keeping"]

_NODE = attrgetter("node")
MEMO_TABLES = 24  # pod shapes whose tables are kept: a 5,000-node table and its verdicts hold ~6 MiB


class VerdictMemo:
    """Verdicts by pod shape and node name, for nodes that have not changed since.

    The owner of a ClusterState subscribes :meth:`forget` to it, so a warm lookup is one dict probe
    per node with no check of the node itself (at 5,000 candidates that is what keeps a call within
    a few milliseconds). A shape's whole table expires at the first moment any reading it used turns
    stale. Each table carries a version, new whenever a verdict is added or forgotten, so a caller
    that kept what it made of the table (a whole encoded reply) knows when it may reuse it.
    """

    def __init__(self) -> None:
        # shape → (verdicts by node name, [valid until, version])
        self._tables: dict[Shape, tuple[dict[str, Verdict], list[float]]] = {}
        self._versions = count(1)
        self._live: dict[tuple[TelemetryBoard, ScoringPolicy], LiveReadings] = {}
        self._shapes: dict[tuple[Any, ...], Shape] = {}
        self._plan_keys: dict[tuple[PodRequest, ScoringPolicy, Mix], PlanKey] = {}
        self._lock = threading.Lock()
        self._following = threading.Lock()
        self._watched: set[tuple[TelemetryBoard, ScoringPolicy]] = set()
        # Each table's version as a refresh began to be followed, for :meth:`version` meanwhile.
        self._before: dict[Shape, float] = {}
        # Run on the refreshing thread once a refresh is followed, before the tables' new versions
        # show (the advisor works out its standing shapes again there: ``scoring.standing``).
        self.after_follow: list[Callable[[], None]] = []
        self.epoch = 0  # one more each time a refresh has been followed
        self.changes = 0  # one more each time nodes changed (``forget``)
        self.signed: dict[str, Any] = {}  # each node's signature (``alike``) by name, while its state holds
        # (changes, the nodes changed; None: all) of the latest changes: a call patches its lookups by it
        self.log: deque[tuple[int, list[str] | None]] = deque(maxlen=64)
        self._standing: set[Shape] = set()  # shapes never pushed out for others (``standing``)
        self._newest_mix = 0  # the newest learned mix a table was made for (``_retire_older_mixes``)
        # Plans shared by nodes alike in all a plan reads (judge.py's signature): most of a fleet.
        self.plans: dict[Hashable, Any] = {}

    def shape(
        self, request: PodRequest, policy: ScoringPolicy, telemetry: TelemetryBoard | None, mix: Mix = NO_MIX
    ) -> Shape:
        """The one Shape object for this content, so per-node probes hit on identity; pods that differ
        only in what their verdicts do not read (``plan.as_planned``) get the one Shape of them all."""
        key = (request, policy, telemetry, mix)
        found = self._shapes.get(key)
        if found is None:
            if len(self._shapes) > 10_000:
                self._shapes.clear()
                self._plan_keys.clear()
            planned = as_planned(request)
            if planned is not None and (planned is not request or mix is not NO_MIX):
                found = self._shapes[key] = self.shape(planned, policy, telemetry)
                return found
            plan_key = self._plan_keys.get((request, policy, mix))
            if plan_key is None:
                plan_key = self._plan_keys[(request, policy, mix)] = PlanKey(request, policy, mix)
            found = self._shapes[key] = Shape(plan_key, telemetry)
        return found

    def table(self, shape: Shape, now: float) -> dict[str, Verdict]:
        """The shape's table (a new one if it has none or it expired), now the most recently used:
        past MEMO_TABLES the least recently used goes (each holds a verdict per candidate node), never
        a pinned one."""
        tables = self._tables
        with self._lock:  # a refresh being followed walks every table: none may be out meanwhile
            found = tables.pop(shape, None)
            if found is None or now >= found[1][0]:
                found = ({}, [float("inf"), next(self._versions)])
                self._retire_older_mixes(shape.plan_key.mix)
                while len(tables) >= MEMO_TABLES + len(self._standing):
                    unpinned = next((s for s in tables if s not in self._standing), None)
                    if unpinned is None:
                        break
                    del tables[unpinned]
            tables[shape] = found
        return found[0]

    def _retire_older_mixes(self, mix: Mix) -> None:
        """A table for a newer learned mix: those judged against older mixes go (a mix is renewed, never
        taken back). Each renewal gives the shapes a mix changes (shares, CPU-only pods) new tables of a
        verdict per node; the old ones stayed until 24 others pushed them out."""
        if mix.version <= self._newest_mix:
            return
        self._newest_mix = mix.version
        tables = self._tables
        for old in [s for s in tables if s not in self._standing and 0 < s.plan_key.mix.version < mix.version]:
            del tables[old]

    def pin(self, shape: Shape) -> None:
        """Keep this shape's table however many others are asked for (``scoring.standing``)."""
        self._standing.add(shape)

    def valid_until(self, shape: Shape) -> float:
        """Until when the shape's table holds (it has none: now)."""
        found = self._tables.get(shape)
        return 0.0 if found is None else found[1][0]

    def version(self, shape: Shape, now: float) -> float | None:
        """The version of the shape's table (None if it has none, it expired, or a telemetry refresh
        has not been followed yet): equal versions, equal verdicts.

        While the refreshing thread follows a refresh of a watched board (``watch``) and works out
        again what it moved (``after_follow``: the standing shapes), each table answers with the
        version it had before: a reply made from the board before stands until then, as it would
        had the refresh come a moment later (0.2-0.4 s at 5,000 nodes). Answering None there sent
        every call of that moment to judge anew what the refreshing thread was judging, waiting on
        its locks and the interpreter's: at 8 connections they piled up behind every refresh (p99
        0.4 s, half the no-op's rate at 5,000 names)."""
        board = shape.telemetry
        if board is not None:
            key = (board, shape.policy)
            if key in self._watched and self._following.locked():
                return self._before.get(shape)  # a refresh being followed: the version from before it
            live = self._live.get(key)
            if live is None or live.refreshed_at != board.refreshed_at:
                return None
        found = self._tables.get(shape)
        return None if found is None or now >= found[1][0] else found[1][1]

    def watch(
        self,
        board: TelemetryBoard,
        policy: ScoringPolicy,
        nodes: Callable[[], Mapping[str, NodeState]],
        clock: Callable[[], float],
    ) -> None:
        """Follow ``board`` as it is refreshed, on the refreshing thread: requests then only look up
        (without this, the first request after a refresh follows it)."""
        self._watched.add((board, policy))
        board.subscribe(lambda: self.follow(board, policy, nodes(), clock(), pushed=True))
        self.follow(board, policy, nodes(), clock(), pushed=True)

    def live(self, board: TelemetryBoard | None, policy: ScoringPolicy) -> LiveReadings | None:
        return None if board is None else self._live.get((board, policy))

    def follow(
        self,
        board: TelemetryBoard | None,
        policy: ScoringPolicy,
        nodes: Mapping[str, NodeState],
        now: float,
        pushed: bool = False,
    ) -> None:
        """After a refresh of ``board``, forget the verdicts of the nodes whose readings moved; the
        rest hold until their readings are next refreshed or turn stale. One comparison otherwise,
        and none of this on a request for a watched board."""
        if board is None:
            return
        key = (board, policy)
        live = self._live.get(key)
        if live is not None and live.refreshed_at == board.refreshed_at:
            return
        if not pushed and key in self._watched and self._following.locked():
            return  # the refreshing thread is following it; until it is done no table has a version
        with self._following:
            live = self._live.get(key)
            if live is None:
                live = self._live.setdefault(key, LiveReadings(board, policy))
            elif live.refreshed_at == board.refreshed_at:
                return  # followed while this waited
            if pushed:
                with self._lock:
                    self._before = {shape: found[1][1] for shape, found in self._tables.items()}
            try:
                moved = live.follow(list(nodes.values()), now)
                self._forget_moved(
                    board, live, [(n, gpus) for name, gpus in moved if (n := nodes.get(name)) is not None]
                )
                if pushed:
                    for then in self.after_follow:
                        then()
            finally:
                self._before = {}

    def _forget_moved(
        self, board: TelemetryBoard, live: LiveReadings, moved: list[tuple[NodeState, frozenset[int] | None]]
    ) -> None:
        """Drop the verdicts of moved nodes that used a moved GPU's telemetry (one that does not
        fit used none; one that fits, its set's)."""
        with self._lock:
            self.epoch += 1
            for node, gpus in moved:
                forget_moved_on(node, gpus)
            for shape, (table, until_version) in list(self._tables.items()):
                if shape.telemetry is not board:
                    continue
                for node, gpus in moved:
                    verdict = table.get(node.name)
                    if verdict is not None and used(verdict, gpus):
                        del table[node.name]
                until_version[1] = next(self._versions)
                # Fresh readings for every node kept: they last until the first one turns stale (a
                # stale reading's note counts its age, so then the table keeps its one-second life).
                if not live.any_stale:
                    until_version[0] = live.stale_at

    def remember(
        self,
        shape: Shape,
        table: dict[str, Verdict],
        made: list[tuple[NodeState, Verdict, float, bool]],
        lookup: Callable[[str], NodeState | None],
        since: tuple[int, int],
    ) -> None:
        """Keep the verdicts one call made (node, verdict, valid until, newly worked out), in the
        shape's table and the new ones on their node state, unless a refresh was followed while
        they were worked out, and each unless its node changed meanwhile (the notice may already
        have come and gone; both sides hold the lock). ``since``: (epoch, changes) when the call
        began; while no node changed since, none needs looking up again."""
        if not made:
            return
        # In columns, in passes in C: at 5,000 nodes a loop in Python was a fifth of a new shape's call.
        nodes, verdicts, untils, new = zip(*made, strict=True)
        names = list(map(_NODE, verdicts))
        with self._lock:
            if since[0] != self.epoch:
                return
            if since[1] == self.changes:
                table.update(zip(names, verdicts, strict=True))
                same: list[bool] | tuple[bool, ...] = new
                valid_until = min(untils, default=float("inf"))
                kept = compress(range(len(new)), new)
            else:
                same = list(map(is_, map(lookup, names), nodes))
                table.update(compress(zip(names, verdicts, strict=True), same))
                valid_until = min(compress(untils, same), default=float("inf"))
                kept = compress(range(len(same)), map(and_, same, new))
            for i in kept:
                if worth_keeping(verdicts[i]):
                    keep(nodes[i], shape, (verdicts[i], untils[i]))
            self._touched(shape, valid_until)

    def take(
        self,
        shape: Shape,
        table: dict[str, Verdict],
        names: list[str],
        verdicts: list[Verdict],
        until: float,
        since: tuple[int, int],
    ) -> bool:
        """Keep these verdicts, handed on from another shape's table, as :meth:`remember` would;
        False when a node changed since the call began (then ``remember`` sorts them one by one)."""
        with self._lock:
            if since != (self.epoch, self.changes):
                return False
            table.update(zip(names, verdicts, strict=True))
            self._touched(shape, until)
            return True

    def _touched(self, shape: Shape, valid_until: float) -> None:
        found = self._tables.get(shape)
        if found is not None:
            found[1][1] = next(self._versions)
            if valid_until < found[1][0]:
                found[1][0] = valid_until

    def forget(self, names: Iterable[str] | None) -> None:
        with self._lock:
            self.changes += 1
            names = None if names is None else list(names)
            self.log.append((self.changes, names))
            if names is None:
                self._tables.clear()
                self.signed.clear()
                return
            for name in names:
                self.signed.pop(name, None)
            for table, until_version in list(self._tables.values()):
                until_version[1] = next(self._versions)
                for name in names:
                    table.pop(name, None)
