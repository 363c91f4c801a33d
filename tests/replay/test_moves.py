"""Moves in the replay: when an arriving pod fits nowhere, one move of a single-GPU pod makes room."""

from __future__ import annotations

import pytest

from extender.advice.replay.engine import replay
from extender.advice.replay.moves import split_defrag
from extender.advice.replay.specs import ArrivalOrder, NodeSpec, Pod, PodShape
from tests.replay.conftest import Spread, pod

_PAIR = (NodeSpec("n0", 8000, 64, 2, "G2"), NodeSpec("n1", 8000, 64, 2, "G2"))


def _order(shapes: list[PodShape]) -> ArrivalOrder:
    return ArrivalOrder(1, tuple(Pod(f"p{i}", s) for i, s in enumerate(shapes)), (0, 1))


def test_a_two_gpu_pod_that_fits_nowhere_is_placed_after_one_move() -> None:
    # 1-GPU pods on n0 and n1: 1 free GPU each < 2 asked. Moving p0 n0 → n1: n0 has 2 free.
    shapes = [pod(1000, 1, 1000), pod(1000, 1, 1000), pod(1000, 2, 1000)]
    without = replay(_PAIR, _order(shapes), Spread(), original_pods=_order(shapes).pods)
    assert without.placements == (0, 1, -1) and without.moves == 0
    moved = replay(_PAIR, _order(shapes), Spread(), original_pods=_order(shapes).pods, defrag=34)
    # budget 34 per 100 arrivals: after arrival 3, ⌊34 × 3 / 100⌋ = 1 move allowed
    assert moved.placements == (1, 1, 0) and moved.moves == 1
    # p0 was alone on its GPU of n0: that GPU is given back (1000 milli), and p2 takes it with the other
    assert moved.given_back == 1000 and moved.used[-1] == 4000


def test_no_move_before_the_bucket_holds_one() -> None:
    shapes = [pod(1000, 1, 1000), pod(1000, 1, 1000), pod(1000, 2, 1000)]
    # budget 33: ⌊33 × 3 / 100⌋ = 0 moves by arrival 3
    moved = replay(_PAIR, _order(shapes), Spread(), original_pods=_order(shapes).pods, defrag=33)
    assert moved.placements == (0, 1, -1) and moved.moves == 0


@pytest.mark.parametrize(
    ("name", "split"),
    [("advisor+defrag1", ("advisor", 1)), ("FGD", ("FGD", 0)), ("advisor+defrag0", ("advisor", -1))],
)
def test_policy_names_with_moves(name: str, split: tuple[str, int]) -> None:
    assert split_defrag(name) == split
