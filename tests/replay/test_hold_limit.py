"""A pod every node holds waits, in the trace's time: back when room is, or at its hold limit as if no
reserve existed; the replay counts how long each waited and what it dropped."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from extender.advice.replay.engine import replay
from extender.advice.replay.nodes import NodeState
from extender.advice.replay.scorer import RunContext
from extender.advice.replay.specs import ArrivalOrder, NodeSpec, Pod, PodShape
from extender.advice.replay.waiting import HeldPods, summarise_waits
from tests.replay.conftest import pod


def _order(shapes: Sequence[PodShape], ranks: tuple[int, ...]) -> ArrivalOrder:
    return ArrivalOrder(1, tuple(Pod(f"p{i}", s) for i, s in enumerate(shapes)), ranks)


class _HoldsShares:
    """Every node alike (the rank decides); a share is held off every node until ``until_whole`` whole-GPU
    pods have been placed. Records the waiting milli the engine reports."""

    name = "HoldsShares"

    def __init__(self, limit_s: float, until_whole: int = 1_000) -> None:
        self.hold_limit_s = limit_s
        self.until_whole = until_whole
        self.whole = 0
        self.waiting_milli = 0

    def prepare(self, context: RunContext) -> None:
        pass

    def score(self, node: NodeState, pod: PodShape) -> int:
        return 7

    def fleet(self, states: Sequence[NodeState]) -> None:
        self.whole = 0

    def moved(self, node: int, state: NodeState) -> None:
        self.whole = sum(1 for free in state.gpus if free == 0)

    def waiting(self, pod: PodShape) -> None:
        self.waiting_milli += pod.gpu_request

    def resumed(self, pod: PodShape) -> None:
        self.waiting_milli -= pod.gpu_request

    def holds(self, node: NodeState, pod: PodShape) -> bool:
        return pod.is_sharing and self.whole < self.until_whole


_TWO = (NodeSpec("n0", 8000, 64, 2, "G2"), NodeSpec("n1", 8000, 64, 2, "G2"))
SHARE, CPU, WHOLE = pod(0, 1, 300), pod(1000), pod(0, 1, 1000)


def test_a_held_pod_comes_back_at_its_limit_as_if_no_reserve_existed() -> None:
    # arrivals every 300 s: the share at 0 s, CPU pods at 300, 600, 900, 1200, 1500 s
    holding = _HoldsShares(limit_s=1000.0)
    order = _order([SHARE, CPU, CPU, CPU, CPU, CPU], ranks=(1, 0))
    result = replay(_TWO, order, holding, original_pods=order.pods, arrival_interval_s=300.0)
    # held at 0 s, its limit passes at 0 + 1000 = 1000 s: after the arrival at 900 s, before the one at
    # 1200 s; it then goes where the rank says (n1, rank 0) though the reserve still holds it
    assert result.placements == (1, 1, 1, 1, 1, 1)
    assert result.waits == (1000.0,)
    # one event per arrival, and one more where it was placed (between the 4th and 5th arrival)
    assert result.arrived == (300,) * 7
    assert result.used == (0, 0, 0, 0, 300, 300, 300)
    assert result.dropped == 0
    assert holding.waiting_milli == 0  # waited 300 milli, placed after all: nothing waits


def test_a_held_pod_comes_back_as_soon_as_room_is_back() -> None:
    # the share is held until one whole-GPU pod has been placed: that pod arrives second, at 352 s
    holding = _HoldsShares(limit_s=1000.0, until_whole=1)
    order = _order([SHARE, WHOLE, CPU], ranks=(1, 0))
    result = replay(_TWO, order, holding, original_pods=order.pods, arrival_interval_s=352.0)
    # the whole GPU goes to n1 (rank 0, GPU 0); tried again right after, the share is no longer held:
    # n1 again, on its other GPU; it waited 352 − 0 = 352 s, short of its 1000 s limit
    assert result.placements == (1, 1, 1)
    assert result.waits == (352.0,)
    assert result.used == (0, 1000, 1300, 1300)
    assert result.arrived == (300, 1300, 1300, 1300)


def test_a_pod_still_held_at_the_end_comes_back_at_its_limit_and_is_dropped_if_nothing_fits() -> None:
    one = (NodeSpec("n0", 8000, 64, 1, "G2"),)
    holding = _HoldsShares(limit_s=500.0)
    order = _order([SHARE, WHOLE], ranks=(0,))
    result = replay(one, order, holding, original_pods=order.pods, arrival_interval_s=100.0)
    # held at 0 s; the whole GPU takes the only GPU at 100 s; at 0 + 500 = 500 s (after the last
    # arrival) its limit passes and no node fits it any more: dropped, after waiting its 500 s
    assert result.placements == (-1, 0)
    assert result.waits == (500.0,)
    assert result.dropped == 1
    assert result.arrived == (300, 1300, 1300)
    assert result.used == (0, 1000, 1000)
    assert holding.waiting_milli == 300


def test_a_pod_no_node_fits_is_dropped_at_once_not_held() -> None:
    holding = _HoldsShares(limit_s=500.0)
    order = _order([pod(0, 1, 300, "A10")], ranks=(1, 0))
    result = replay(_TWO, order, holding, original_pods=order.pods)
    assert result.placements == (-1,)
    assert result.waits == ()
    assert holding.waiting_milli == 300


def test_the_waits_are_summarised_over_runs_mean_nearest_rank_p95_and_max() -> None:
    # 20 waits pooled from two runs: 1..19 s and 100 s; mean (190 + 100) / 20 = 14.5; p95: the 19th of
    # 20 sorted (⌈0.95 × 20⌉ = 19) = 19 s; max 100 s; held per run 20 / 2 = 10
    summary = summarise_waits([[float(w) for w in range(1, 11)], [*(float(w) for w in range(11, 20)), 100.0]])
    assert (summary.held_per_run, summary.mean_s, summary.p95_s, summary.max_s) == (10.0, 14.5, 19.0, 100.0)
    assert summarise_waits([[], []]).held_per_run == 0.0


def test_a_hold_limit_must_be_above_zero() -> None:
    with pytest.raises(ValueError, match="above 0"):
        HeldPods(0.0)
    held = HeldPods(10.0)
    held.hold(3, SHARE, 5.0)
    assert held.due(14.9) == [] and len(held) == 1
    assert [h.index for h in held.due(15.0)] == [3]
    assert held.waits == [10.0]
