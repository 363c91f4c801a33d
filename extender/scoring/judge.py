"""Filter verdicts and 0–10 node scores for one pod, each with a breakdown and a one-line reason.

A node is judged by the GPU set it would really hand the pod (``plan``: placement), what that leaves
behind, and how busy those GPUs are now (``headroom``); ``formula`` turns those into the score. Without
a topology the set, fragmentation and NUMA terms are neutral (0.5), "scored on counts alone".

Filter rejections name their reason; ``unresolvable`` marks those no preemption or waiting can cure
(the node can never offer what the pod asks), which kube-scheduler then does not retry by preemption.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Mapping
from itertools import compress, repeat
from operator import and_, is_, is_not
from typing import cast

from extender.cluster.state import NodeState
from extender.model.pods import PodRequest
from extender.model.readings import TelemetryBoard
from extender.placement import Placer
from extender.scoring.alike import Signature, Work, signature
from extender.scoring.cliques import toward_clique
from extender.scoring.lookup_stream import LookupStreams
from extender.scoring.memo import PlanKey, Shape, VerdictMemo, keep, worth_keeping
from extender.scoring.node_verdict import judged, plan_of
from extender.scoring.plan import as_planned
from extender.scoring.policy import ScoringPolicy
from extender.scoring.ranking import on_the_wire
from extender.scoring.ranking_stream import RankingStreams
from extender.scoring.verdict import UNJUDGED, Verdict
from extender.scoring.workload import NO_MIX, Mix

__all__ = ["evaluate", "judge_all", "judge_node"]

_Bare = tuple[Shape, dict[str, Verdict], float]  # a shape, its table, until when that holds

log = logging.getLogger(__name__)


def judge_all(
    request: PodRequest,
    names: list[str],
    nodes: Mapping[str, NodeState],
    telemetry: TelemetryBoard | None,
    policy: ScoringPolicy,
    now: float,
    memo: VerdictMemo | None = None,
    placer: Placer | None = None,
    mix: Mix = NO_MIX,
    ranked: bool = True,
) -> list[Verdict]:
    """Verdicts for every candidate node of one pod, in order; ``nodes`` maps names to what is known.

    Remembered on each NodeState (a new one on every change) per shape (request, policy, telemetry
    refresh) until the earliest moment one of the readings used turns stale, and in ``memo`` by node
    name: a steady cluster costs a lookup per node. ``placer`` is the placement engine to ask (the
    cluster model's, so nodes of one machine type share its work); without one, a fresh engine. ``mix``
    is the learned workload the stranding term weighs against. Scores go out as ``ranking`` says;
    ``ranked=False`` leaves them as worked out, for a caller that reads no score (filter).
    """
    if not request.wants_gpu and not (request.cpu_milli and mix.pods):
        return [Verdict(name, True, "pod asks for no GPU: not judged", score=0) for name in names]
    shape, known, since, work, bare = _setup(request, nodes, telemetry, policy, now, memo, placer or Placer(), mix)
    lookup = nodes.get
    work_out, made, bare_made = _worker(shape, work, bare, lookup, now)
    # The hot path at 5,000 candidates: one probe per node, in C (or, call after call over one list, only
    # where nodes changed: ``lookup_stream``); only what the table lacks is visited.
    found, mark = (
        (list(map(known.get, names)), 0)
        if memo is None
        else _streams(memo).lookups.found(shape, names, known, since[0], memo.log)
    )
    verdicts = cast(list[Verdict], found)
    missing = _missing(found)
    if missing:
        if memo is not None and bare is not None and (taken := _twins(names, found, lookup, work, bare, memo.signed)):
            _hand_on(memo, shape, known, taken, lookup, bare[2], since, made)
        # Only the missing are visited (between two pods, the node or two that changed).
        for i in missing:
            if found[i] is None:
                found[i] = work_out(names[i])
    _keep_made(memo, shape, known, made, bare, bare_made, lookup, since)
    if memo is not None:
        _streams(memo).lookups.keep(shape, names, known, since[0], mark, verdicts, missing)
    # The clique term reads other nodes (where a group's members are): applied after the memo, never kept.
    verdicts = toward_clique(request, verdicts, nodes)
    if not ranked:
        return verdicts
    return on_the_wire(verdicts) if memo is None else _streams(memo).ranking.on_the_wire(shape, verdicts)


def _missing(found: list[Verdict | None]) -> list[int]:
    """The positions the table had no verdict for. Mostly none: the positions are made only when one
    is. Not ``None in found``: that calls each verdict's dataclass ``__eq__`` in Python (261 µs at 5,000
    nodes, against 75 for this identity scan in C)."""
    if not any(map(is_, found, repeat(None))):
        return []
    return list(compress(range(len(found)), map(is_, found, repeat(None))))


def _keep_made(
    memo: VerdictMemo | None,
    shape: Shape,
    known: dict[str, Verdict],
    made: _Made,
    bare: _Bare | None,
    bare_made: _Made,
    lookup: Callable[[str], NodeState | None],
    since: tuple[int, int],
) -> None:
    """What a call worked out: into the memo's tables (the shape's, its twin's), or without a memo onto
    each node state."""
    if memo is not None:
        memo.remember(shape, known, made, lookup, since)
        if bare is not None:
            memo.remember(bare[0], bare[1], bare_made, lookup, since)
        return
    for node, verdict, valid_until, new in made:
        if new and worth_keeping(verdict):
            keep(node, shape, (verdict, valid_until))


class _Streams:
    """A memo's calls one after another: its lookups (``lookup_stream``) and rankings (``ranking_stream``)."""

    def __init__(self) -> None:
        self.lookups, self.ranking = LookupStreams(), RankingStreams()


# Living and dying with their memo.
_STREAMS: weakref.WeakKeyDictionary[VerdictMemo, _Streams] = weakref.WeakKeyDictionary()


def _streams(memo: VerdictMemo) -> _Streams:
    found = _STREAMS.get(memo)
    if found is None:
        found = _STREAMS[memo] = _Streams()
    return found


_Made = list[tuple[NodeState, Verdict, float, bool]]  # (node, verdict, valid until, newly worked out)


def _twins(
    names: list[str],
    verdicts: list[Verdict | None],
    lookup: Callable[[str], NodeState | None],
    work: Work,
    bare: _Bare,
    signed: dict[str, Signature | None],
) -> tuple[list[str], list[Verdict]] | None:
    """Fill in the candidates the shape's table lacks whose verdict is that of its twin, the pod
    without its VRAM declaration and NVLink requirement (the twin's table has one, the VRAM fits
    wherever the plan looks, the set handed out is NVLink-joined anyway), in passes in C over names
    only (each node state is a walk through memory; at 5,000 candidates those walks were the cost):
    a new VRAM figure or NVLink pod then costs a few lookups per node. What it took, in columns:
    (names, verdicts); None when a node is unknown or cannot be signed (then each is looked at on its
    own, ``work_out``)."""
    missing = list(compress(range(len(names)), map(is_, verdicts, repeat(None))))
    wanted = list(map(names.__getitem__, missing))
    sigs = list(map(signed.get, wanted))
    for j in compress(range(len(wanted)), map(is_, sigs, repeat(None))):
        node = lookup(wanted[j])
        if node is None or (sig := signature(node)) is None:
            return None
        sigs[j] = signed[wanted[j]] = sig
    some = dict(zip(sigs, wanted, strict=True))  # a candidate of each signature
    holds = work.twin_holds_all(cast(list[Signature], sigs), lambda sig: lookup(some[sig]))
    twins = cast(list[Verdict], list(map(bare[1].get, wanted)))
    same = list(map(and_, map(is_not, twins, repeat(None)), holds))
    for j in compress(range(len(missing)), same):
        if twins[j].held:  # judged with a memory-held GPU: the pod's VRAM may refuse it (``held``)
            same[j] = False
        else:
            verdicts[missing[j]] = twins[j]
    return list(compress(wanted, same)), list(compress(twins, same))


def _hand_on(
    memo: VerdictMemo,
    shape: Shape,
    table: dict[str, Verdict],
    taken: tuple[list[str], list[Verdict]],
    lookup: Callable[[str], NodeState | None],
    until: float,
    since: tuple[int, int],
    made: _Made,
) -> None:
    """Keep the twins' verdicts in the shape's table at once; if a node changed meanwhile, with what
    the call made, to be sorted one by one."""
    if not memo.take(shape, table, taken[0], taken[1], until, since):
        states = list(map(lookup, taken[0]))  # a node gone meanwhile is no longer judged: not kept
        made.extend((n, v, until, False) for n, v in zip(states, taken[1], strict=True) if n is not None)


def _worker(
    shape: Shape, work: Work, bare: _Bare | None, lookup: Callable[[str], NodeState | None], now: float
) -> tuple[Callable[[str], Verdict], _Made, _Made]:
    """The verdict of a node the shape's table lacks, and what it made: for the shape, and for its
    twin (``_twins``) where the twin's verdict is this one (a closure: at 5,000 candidates locals beat
    attributes)."""
    made: _Made = []
    bare_made: _Made = []
    bare_get = None if bare is None else bare[1].get
    bare_until = float("inf") if bare is None else bare[2]

    def work_out(name: str) -> Verdict:
        node = lookup(name)
        if node is None:
            log.info("node %s unknown to gpu-advisor: passed unjudged (fail open)", name)
            return Verdict(
                name, True, "unknown to gpu-advisor (not synced yet?): passed unjudged", score=0, rank=UNJUDGED
            )
        hit = node.memo.get(shape)
        if hit is not None and now < hit[1]:
            made.append((node, hit[0], hit[1], False))
            return hit[0]  # type: ignore[no-any-return]
        holds = bare_get is not None and work.twin_holds(node)
        # A verdict judged with a memory-held GPU is no twin's: the pod's VRAM may refuse that set.
        if holds and (same := bare_get(name)) is not None and not same.held:  # type: ignore[misc]
            made.append((node, same, bare_until, False))  # the table keeps it; the node state need not
            return same
        verdict, valid_until = work.judge(node, name)
        made.append((node, verdict, valid_until, True))
        if holds and not verdict.held:
            bare_made.append((node, verdict, valid_until, False))
        return verdict

    return work_out, made, bare_made


def _setup(
    request: PodRequest,
    nodes: Mapping[str, NodeState],
    telemetry: TelemetryBoard | None,
    policy: ScoringPolicy,
    now: float,
    memo: VerdictMemo | None,
    placer: Placer,
    mix: Mix,
) -> tuple[Shape, dict[str, Verdict], tuple[int, int], Work, _Bare | None]:
    """(the shape, its remembered verdicts by node name, the memo's epoch, the work for the rest, and
    for a pod that declares VRAM the table of the pod without it).

    A pod that declares VRAM gets, on a node where that VRAM fits wherever its plan looks, the very
    verdict of the same pod without the declaration: kept in that shape's table, shared by them all,
    so a new VRAM figure costs a few lookups per node rather than a verdict."""
    if memo is None:
        planned = as_planned(request)  # as the memo keys it (``VerdictMemo.shape``)
        shape = Shape(PlanKey(request, policy, mix) if planned is None else PlanKey(planned, policy), telemetry)
        return shape, {}, (0, 0), Work(shape, placer, now, {}, None), None
    memo.follow(telemetry, policy, nodes, now)  # a no-op for a board the memo watches
    shape = memo.shape(request, policy, telemetry, mix)
    work = Work(shape, placer, now, memo.plans, memo.live(telemetry, policy))
    bare = None
    if work.bare is not None:  # its table first: a table made after may push out an older one
        key = work.bare[0]
        bare_shape = memo.shape(key.request, key.policy, telemetry, key.mix)
        bare = bare_shape, memo.table(bare_shape, now), memo.valid_until(bare_shape)
    return shape, memo.table(shape, now), (memo.epoch, memo.changes), work, bare


def evaluate(
    request: PodRequest,
    node: NodeState | None,
    name: str,
    telemetry: TelemetryBoard | None,
    policy: ScoringPolicy,
    now: float,
    mix: Mix = NO_MIX,
) -> Verdict:
    """The verdict and score of one candidate node for one pod."""
    nodes = {name: node} if node is not None else {}
    return judge_all(request, [name], nodes, telemetry, policy, now, mix=mix)[0]


def judge_node(node: NodeState, name: str, shape: Shape, placer: Placer, now: float) -> tuple[Verdict, float]:
    """One node's verdict for this shape and until when it holds, remembered on the node state: what
    the replay asks per node (filter and prioritize ask :func:`judge_all`, which shares work across
    alike nodes; the verdicts are the same)."""
    hit = node.memo.get(shape)
    if hit is not None and now < hit[1]:
        return hit  # type: ignore[no-any-return]
    found = judged(node, name, shape, plan_of(node, shape.plan_key, placer), now, placer)
    keep(node, shape, found)
    return found
