"""The 0–10 scores on the wire keep the advisor's full-precision argmax and nothing more changes."""

from __future__ import annotations

import pytest

from extender.scoring.ranking import on_the_wire, tie_order
from extender.scoring.verdict import UNJUDGED, Verdict


def v(node: str, score: int, rank: tuple[float, float], fits: bool = True) -> Verdict:
    return Verdict(node, fits, "", score=score, rank=rank)


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        # a unique best keeps every score as it was
        ([v("a", 9, (50, 0.9)), v("b", 7, (50, 0.7))], [9, 7]),
        # b rounds to 9 too but ranks lower: lowered to 8, so kube-scheduler's argmax is a
        ([v("a", 9, (50, 0.91)), v("b", 9, (50, 0.88))], [9, 8]),
        # a strands less (level 53) though its blend rounds lower: it keeps 6, b (score 8) goes to 5
        ([v("a", 6, (53, 0.6)), v("b", 8, (50, 0.8)), v("c", 3, (49, 0.3))], [6, 5, 3]),
        # the best at 0 with another node passing is raised to 1
        ([v("a", 0, (51, 0.0)), v("b", 0, (50, 0.0))], [1, 0]),
        # equal ranks: only the first in tie order keeps the top, CRC-32 "b" 1908338681 < "a" 3904355907;
        # failed nodes are untouched
        ([v("a", 7, (50, 0.7)), v("b", 7, (50, 0.7)), v("c", 9, (60, 0.9), fits=False)], [6, 7, 9]),
        # nodes passed unjudged (unknown to the model) get no opinion, and never the top
        ([v("a", 0, UNJUDGED), v("b", 0, UNJUDGED)], [0, 0]),
        ([v("a", 0, UNJUDGED), v("b", 3, (50, 0.3))], [0, 3]),
        # all equal at 0: the first in tie order is raised to 1 ("c" 112844655 < "b" < "a")
        ([v("a", 0, (50, 0.0)), v("b", 0, (50, 0.0)), v("c", 0, (50, 0.0))], [0, 0, 1]),
    ],
)
def test_the_best_by_rank_are_the_only_nodes_with_the_top_score(verdicts: list[Verdict], expected: list[int]) -> None:
    assert [x.score for x in on_the_wire(verdicts)] == expected


def test_nothing_to_change_hands_back_the_same_list() -> None:
    verdicts = [v("a", 9, (50, 0.9)), v("b", 7, (50, 0.7))]
    assert on_the_wire(verdicts) is verdicts


@pytest.mark.parametrize(
    ("names", "first"),
    [
        # CRC-32: "n0" 2625528954, "n1" 3950597356, "n2" 1919944022
        (["n0", "n1", "n2"], "n2"),
        # "dgx1-v100-a" 2602715351, "dgx1-v100-b" 36378989, "a100-mig-a" 49475231
        (["dgx1-v100-a", "dgx1-v100-b", "a100-mig-a"], "dgx1-v100-b"),
    ],
)
def test_the_tie_order_is_the_crc32_of_the_name_the_same_for_every_pod(names: list[str], first: str) -> None:
    assert min(names, key=tie_order) == first
    wire = on_the_wire([v(name, 8, (50, 0.8)) for name in names])
    assert [x.node for x in wire if x.score == 8] == [first] and all(x.score == 7 for x in wire if x.node != first)


def _reference(verdicts: list[Verdict]) -> list[int]:
    """The rule as the module's text states it, one verdict at a time."""
    passing = [x for x in verdicts if x.fits]
    if not passing or max(x.rank for x in passing) == UNJUDGED:
        return [x.score for x in verdicts]
    best_rank = max(x.rank for x in passing)
    best = min((x for x in passing if x.rank == best_rank), key=lambda x: tie_order(x.node))
    top = max(best.score, 1) if len(passing) > 1 else best.score
    return [
        x.score if not x.fits else top if x is best else min(x.score, top - 1) if x.score >= top else x.score
        for x in verdicts
    ]


@pytest.mark.parametrize("seed", range(40))
def test_scores_follow_the_rule_on_random_fleets(seed: int) -> None:
    import random

    rnd = random.Random(seed)
    verdicts = [
        v(f"n{i}", rnd.randint(0, 10), (rnd.choice([49, 50, 51]), rnd.choice([0.0, 0.3, 0.7])), rnd.random() < 0.8)
        for i in range(rnd.randint(1, 60))
    ]
    assert [x.score for x in on_the_wire(verdicts)] == _reference(verdicts)


def test_a_verdict_lowered_alike_again_is_the_very_copy_of_last_time() -> None:
    """Between two pods a node or two change: the others' lowered copies are handed on, not made anew,
    so the reply's fragments encoded for them are found again."""
    verdicts = [v(f"n{i}", 8, (50, 0.8 - i / 100)) for i in range(5)]
    first = on_the_wire(verdicts)
    verdicts[0] = v("n0", 3, (50, 0.3))  # the best node took the last pod: n1 is best now
    second = on_the_wire(verdicts)
    assert [x.score for x in second] == [3, 8, 7, 7, 7]
    assert all(second[i] is first[i] for i in (2, 3, 4))
    assert second[1] is verdicts[1] and verdicts[1].score == 8  # the verdicts themselves are never changed
