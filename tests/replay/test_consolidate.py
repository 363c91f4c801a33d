"""Consolidating moves: once the cluster fills, the move that most lowers F, one at a time, from the bucket."""

from __future__ import annotations

from collections.abc import Callable

from extender.advice.replay.consolidate import consolidating_move
from extender.advice.replay.fragmentation import FragModel
from extender.advice.replay.moves import FILLING, Mover
from extender.advice.replay.nodes import NodeState, fits
from extender.advice.replay.rescue import Move, Seated
from extender.advice.replay.specs import PodShape
from extender.advice.replay.workload import typical_pods
from tests.replay.conftest import node, pod

_WHOLE, _BIG = pod(0, 1, 1000), pod(0, 1, 650)  # the workload: half 1-GPU pods, half 650 shares
_FRAG = FragModel(typical_pods([_WHOLE, _BIG]))
_SMALL, _HUNGRY = pod(0, 1, 320), pod(0, 1, 650, mem=1000)  # the 650 placed asks memory node 0 lacks


def _cluster() -> tuple[list[NodeState], list[dict[int, Seated]]]:
    # node 0: one GPU, a 320 share alone (680 free), 500 MiB free; node 1: one GPU, a 650 share (350 free)
    states = [node(8000, (680,), mem=500), node(8000, (350,))]
    return states, [{0: (_SMALL, (0,))}, {1: (_HUNGRY, (0,))}]


def _feasible(states: list[NodeState]) -> Callable[[PodShape], list[int]]:
    return lambda shape: [n for n, state in enumerate(states) if fits(state, shape)]


def test_the_lone_share_joins_the_gap_it_fits_and_a_gpu_comes_free() -> None:
    # F(node 0) = ½ × 680 (no 1000 for a 1-GPU pod) + ½ × 0 (the 650 fits) = 340; idle after: 0.
    # F(node 1) = ½ × 350 + ½ × 350 (neither fits) = 350; with the 320 on it (30 free): ½ × 30 + ½ × 30 = 30.
    # The move takes 340 + 320 = 660 milli off F; the 650 cannot go the other way (node 0 lacks memory).
    states, seated = _cluster()
    assert _FRAG.node(states[0]) == 340 and _FRAG.node(states[1]) == 350
    move = consolidating_move(states, seated, _feasible(states), _FRAG, 0.0)
    assert move == Move(0, _SMALL, 0, 1, 0)


def test_no_move_when_none_lowers_f_enough() -> None:
    states, seated = _cluster()
    assert consolidating_move(states, seated, _feasible(states), _FRAG, 660.0) is None
    # a lone share beside an idle GPU: moving it only swaps which GPU is idle, F stays
    lone = [node(8000, (680,)), node(8000, (1000,))]
    assert consolidating_move(lone, [{0: (_SMALL, (0,))}, {}], _feasible(lone), _FRAG, 0.0) is None


def test_the_mover_consolidates_only_once_the_cluster_fills_and_the_bucket_holds_a_move() -> None:
    states, seated = _cluster()
    mover = Mover(1, 2, _FRAG)
    for index, pods in enumerate(seated):
        for pod_index, (shape, gpus) in pods.items():
            mover.seat(pod_index, index, states[index], shape, gpus[0])
    feasible = _feasible(states)
    assert mover.consolidation(states, 100, FILLING - 0.01, feasible) == ()
    assert mover.consolidation(states, 99, FILLING, feasible) == ()  # ⌊1 × 99 / 100⌋ = 0
    assert mover.consolidation(states, 100, FILLING, feasible) == (Move(0, _SMALL, 0, 1, 0),)
