"""Ranking call after call (``ranking_stream``) sends what ranking afresh (``on_the_wire``) sends, and
finds the order ``read_order`` reads afresh (the filter that passes the best node alone).

Random sequences as kube-scheduler makes them: one candidate list, and between two calls a few
positions get a new verdict (the node just bound fills up, a node refuses, a node frees up), now and
then many at once; scores and ranks drawn from few values so that ties, raises and lowerings happen.
"""

from __future__ import annotations

import random

import pytest

from extender.scoring.ranking import on_the_wire, read_order
from extender.scoring.ranking_stream import OrderStreams, RankingStreams
from extender.scoring.verdict import UNJUDGED, Verdict


def verdict(rng: random.Random, node: str) -> Verdict:
    if rng.random() < 0.15:
        return Verdict(node, False, "no room", unresolvable=rng.random() < 0.5)
    if rng.random() < 0.05:
        return Verdict(node, True, "unknown to the model", rank=UNJUDGED)
    level = rng.choice((40.0, 50.0, 50.0, 60.0))
    blend = rng.choice((0.1, 0.25, 0.25, 0.5))
    return Verdict(node, True, "fits", score=rng.choice((0, 3, 5, 5, 7, 10)), rank=(level, blend))


def sent(verdicts: list[Verdict]) -> list[tuple[str, bool, int, str]]:
    return [(v.node, v.fits, v.score, v.reason) for v in verdicts]


def calls(seed: int) -> list[tuple[str, list[Verdict]]]:
    """Sixty calls over one candidate list: (pod shape, its verdicts)."""
    rng = random.Random(seed)
    names = [f"node-{i:03d}" for i in range(rng.choice((1, 2, 5, 40, 200)))]
    current = {shape: [verdict(rng, n) for n in names] for shape in ("a", "b", "c")}
    made = []
    for _call in range(60):
        shape = rng.choice(("a", "a", "a", "b", "c"))  # three shapes through a memory of two
        verdicts = list(current[shape])
        for i in rng.sample(range(len(names)), k=min(len(names), rng.choice((0, 1, 1, 2, 3, 80)))):
            verdicts[i] = verdict(rng, names[i])
        if rng.random() < 0.2:  # the best node takes the pod: ranks higher, or refuses once full
            best = max(range(len(names)), key=lambda i: (verdicts[i].fits, verdicts[i].rank))
            verdicts[best] = Verdict(names[best], True, "fits", score=rng.choice((5, 10)), rank=(60.0, 0.9))
        current[shape] = verdicts
        made.append((shape, verdicts))
    return made


@pytest.mark.parametrize("seed", range(40))
def test_patched_rankings_are_the_rankings_read_afresh(seed: int) -> None:
    streams = RankingStreams(size=2)
    for shape, verdicts in calls(seed):
        assert sent(streams.on_the_wire(shape, list(verdicts))) == sent(on_the_wire(list(verdicts)))


@pytest.mark.parametrize("seed", range(40))
def test_patched_orders_and_counts_are_those_read_afresh(seed: int) -> None:
    streams = OrderStreams(size=2)
    for shape, verdicts in calls(seed):
        read = streams.read(shape, list(verdicts))
        assert read.order == read_order(list(verdicts))
        assert read.unresolvable == sum(v.unresolvable for v in verdicts)


def test_a_call_of_the_same_verdicts_is_answered_from_the_last() -> None:
    verdicts = [Verdict(f"n{i}", True, "fits", score=5, rank=(50.0, 0.25)) for i in range(4)]
    streams = RankingStreams()
    first = streams.on_the_wire("pod", list(verdicts))
    again = streams.on_the_wire("pod", list(verdicts))
    # one node keeps 5, the three that reach it go one below, each the same lowered copy as before
    assert sorted(v.score for v in first) == [4, 4, 4, 5]
    assert all(a is b for a, b in zip(first, again, strict=True))
