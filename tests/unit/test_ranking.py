"""The 0–10 scores on the wire keep the advisor's full-precision argmax and nothing more changes."""

from __future__ import annotations

import pytest

from extender.scoring.ranking import on_the_wire
from extender.scoring.verdict import Verdict


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
        # equal ranks stay equal: kube-scheduler's own tie rule picks among them; failed nodes are untouched
        ([v("a", 7, (50, 0.7)), v("b", 7, (50, 0.7)), v("c", 9, (60, 0.9), fits=False)], [7, 7, 9]),
    ],
)
def test_the_best_by_rank_are_the_only_nodes_with_the_top_score(verdicts: list[Verdict], expected: list[int]) -> None:
    assert [x.score for x in on_the_wire(verdicts)] == expected


def test_nothing_to_change_hands_back_the_same_list() -> None:
    verdicts = [v("a", 9, (50, 0.9)), v("b", 7, (50, 0.7))]
    assert on_the_wire(verdicts) is verdicts
