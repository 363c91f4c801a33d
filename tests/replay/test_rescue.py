"""A rescue: the fewest moves after which a pod that fits nowhere fits, each move judged after the ones before."""

from __future__ import annotations

from extender.advice.replay.engine import replay
from extender.advice.replay.rescue import Move, Seated, clearing, destinations
from extender.advice.replay.specs import ArrivalOrder, NodeSpec, Pod, PodShape
from tests.replay.conftest import Spread, node, pod

_FOURS = (NodeSpec("a", 32000, 256, 4, "G2"), NodeSpec("b", 32000, 256, 4, "G2"))
_ONE = pod(1000, 1, 1000)


def _spread_then_four(budget: int) -> tuple[tuple[int, ...], int, int, int]:
    shapes = [_ONE, _ONE, _ONE, _ONE, pod(1000, 4, 1000)]
    order = ArrivalOrder(1, tuple(Pod(f"p{i}", s) for i, s in enumerate(shapes)), (0, 1))
    run = replay(_FOURS, order, Spread(), original_pods=order.pods, defrag=budget)
    return run.placements, run.moves, run.given_back, run.used[-1]


def test_a_four_gpu_pod_needs_two_moves_and_gets_them_when_the_bucket_holds_two() -> None:
    # p0 → a, p1 → b, p2 → a, p3 → b: each node keeps 2 idle GPUs, the 4-GPU pod p4 fits on neither.
    # Off a (or b) both 1-GPU pods must leave: two moves; they fit on b's 2 idle GPUs.
    # Budget 40: after arrival 5, ⌊40 × 5 / 100⌋ = 2 moves in the bucket.
    # Both GPUs they leave on a are given back (2 × 1000 milli); the 4-GPU pod then fits a: 8 GPUs in use.
    placements, moves, given_back, used = _spread_then_four(40)
    assert placements == (1, 1, 1, 1, 0) and moves == 2 and given_back == 2000 and used == 8000


def test_one_move_cannot_place_what_needs_two() -> None:
    # Budget 20: ⌊20 × 5 / 100⌋ = 1 move; one pod off a leaves 3 idle GPUs < 4, so nothing moves.
    placements, moves, given_back, used = _spread_then_four(20)
    assert placements == (0, 1, 0, 1, -1) and moves == 0 and given_back == 0 and used == 4000


def _seated(*pods: tuple[PodShape, int]) -> dict[int, Seated]:
    return {index: (shape, (gpu,)) for index, (shape, gpu) in enumerate(pods)}


def _anywhere(shape: PodShape) -> bool:
    return True


def test_clearing_takes_the_gpu_with_the_fewest_pods() -> None:
    # GPU 0 holds two shares (300 + 300), GPU 1 one share of 600: a whole-GPU pod wants one pod gone (GPU 1).
    share, big = pod(1000, 1, 300), pod(1000, 1, 600)
    seated = _seated((share, 0), (share, 0), (big, 1))
    assert clearing(node(8000, (400, 400)), seated, _ONE, 8, _anywhere) == (2,)


def test_clearing_for_a_share_moves_the_smallest_pod_that_makes_room() -> None:
    # A 500 share; a GPU with 100 free beside a 200 and a 700: 100 + 200 < 500 but 100 + 700 ≥ 500, so
    # one pod is the fewest and the 700 leaves. A GPU with 150 free beside a 450 and a 400: each reaches
    # alone (150 + 400 = 550 ≥ 500), and the smaller, the 400, leaves.
    assert clearing(
        node(8000, (100,)), _seated((pod(0, 1, 200), 0), (pod(0, 1, 700), 0)), pod(0, 1, 500), 8, _anywhere
    ) == (1,)
    seated = _seated((pod(0, 1, 450), 0), (pod(0, 1, 400), 0))
    assert clearing(node(8000, (150,)), seated, pod(0, 1, 500), 8, _anywhere) == (1,)


def test_clearing_respects_the_limit_and_pods_with_nowhere_to_go() -> None:
    share = pod(1000, 1, 300)
    seated = _seated((share, 0), (share, 0), (share, 0))  # 900 milli on GPU 0 in three pods
    assert clearing(node(8000, (100,)), seated, _ONE, 2, _anywhere) is None
    assert clearing(node(8000, (100,)), seated, _ONE, 3, _anywhere) == (0, 1, 2)
    assert clearing(node(8000, (100,)), seated, _ONE, 3, lambda shape: False) is None


def test_each_destination_is_judged_after_the_moves_before_it() -> None:
    # Two 300 shares leave node 0. Without a workload to weigh F, a pod goes where the least free milli
    # is left: the first to node 2 (350 − 300 = 50 left, against 500 − 300 = 200 on node 1). Node 2 then
    # has 50 < 300, so the second goes to node 1.
    states = [node(8000, (0,)), node(8000, (500,)), node(8000, (350,))]
    share = pod(1000, 1, 300)
    placed = destinations(states, 0, [(7, share), (8, share)], lambda shape: [1, 2], None)
    assert placed is not None
    moves, after = placed
    assert [(m.index, m.target) for m in moves] == [(7, 2), (8, 1)]
    assert after[1].gpus == (200,) and after[2].gpus == (50,)


def test_no_destination_for_the_second_pod_means_no_rescue() -> None:
    # Node 1 has one idle GPU: the first 1-GPU pod takes it, the second has nowhere to go.
    states = [node(8000, (0, 0)), node(8000, (1000, 0))]
    assert destinations(states, 0, [(1, _ONE), (2, _ONE)], lambda shape: [1], None) is None
    placed = destinations(states, 0, [(1, _ONE)], lambda shape: [0, 1], None)
    assert placed is not None and placed[0] == (Move(1, _ONE, 0, 1, -1),)
