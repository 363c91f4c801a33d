"""The 0–10 scores on the wire keep the advisor's full-precision argmax and nothing more changes."""

from __future__ import annotations

import pytest

from extender.scoring.ranking import Crown, chosen, crown, lowered, on_the_wire
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


# CRC-32 of the pod names used below, written out: "a" 0xE8B7BE43 = 3904355907, "b" 0x71BEEFF9 = 1908338681,
# "train-2" 0x8B698CBD = 2338950333.
@pytest.mark.parametrize(
    ("count", "pod", "position"),
    [
        (3, "a", 3904355907 % 3),  # = 0
        (3, "b", 1908338681 % 3),  # = 2
        (7, "train-2", 2338950333 % 7),  # = 6
        (1, "anything", 0),
    ],
)
def test_the_rule_takes_crc32_of_the_pod_name_modulo_the_tie(count: int, pod: str, position: int) -> None:
    assert chosen(count, pod) == position


def test_a_tie_at_the_top_leaves_exactly_one_node_on_top_chosen_by_name_order() -> None:
    # c, a, b tie at 7 (same rank); sorted: a, b, c; pod "b" takes position 1908338681 % 3 = 2: c.
    wire = on_the_wire([v("c", 7, (50, 0.7)), v("a", 7, (50, 0.7)), v("b", 7, (50, 0.7)), v("d", 5, (50, 0.5))])
    assert [x.score for x in crown(wire, "b")] == [7, 6, 6, 5]
    # pod "a" takes position 0: a
    assert [x.score for x in crown(wire, "a")] == [6, 7, 6, 5]


def test_a_tie_at_zero_raises_the_chosen_to_one() -> None:
    wire = on_the_wire([v("x", 0, (50, 0.0)), v("y", 0, (50, 0.0)), v("z", 4, (60, 0.4), fits=False)])
    assert [x.score for x in crown(wire, "a")] == [0, 1, 4]  # "a": 3904355907 % 2 = 1 of (x, y): y


def test_the_shape_level_reply_has_no_node_on_top_and_the_crown_to_raise_one() -> None:
    wire = on_the_wire([v("n2", 9, (50, 0.9)), v("n1", 9, (50, 0.9)), v("n3", 8, (50, 0.8))])
    low, found = lowered(wire)
    assert [x.score for x in low] == [8, 8, 8]
    assert found == Crown(("n1", "n2"), top=9, low=8)
    assert found.winner("a") == "n2" and found.winner("b") == "n2"  # 3904355907 and 1908338681 are odd: 1


def test_no_tie_means_nothing_to_crown() -> None:
    wire = on_the_wire([v("a", 9, (50, 0.9)), v("b", 7, (50, 0.7))])
    assert lowered(wire) == (wire, None) and crown(wire, "p") is wire
