"""The reserve: a share is held off an idle GPU when the whole-GPU pods still to come are likely to need
that room more than the share and what later fills its gap make of it."""

from __future__ import annotations

import math

import pytest

from extender.advice.replay.advisor_policy import replay_node_object, replay_pod_object
from extender.advice.replay.specs import PodShape
from extender.cluster.state import MachineTypes, bound_pod, node_state
from extender.model.pods import PodRequest, pod_request
from extender.scoring.reserve import Demand, Fleet, claimed, demand, fill, hold, holds, room, takes_room
from extender.scoring.verdict import Verdict
from extender.scoring.workload import learned_from

# The median whole-GPU pod asks 8 cores and 32 GiB per GPU; GPU pods are 5 % shares of 100 milli,
# 30 % of 470, 20 % of 810 (the rest whole GPUs).
WANTS = Demand(0.6, 8000, 32768, ((100, 0.05), (470, 0.30), (810, 0.20)))


@pytest.mark.parametrize(
    ("free", "cpu", "memory", "expected"),
    [
        ((1000, 1000, 1000, 1000), 64_000, 262_144, 4),  # 4 idle; 64/8 = 8 by CPU, 256/32 = 8 by memory
        ((1000, 1000, 1000, 1000), 20_000, 262_144, 2),  # ⌊20/8⌋ = 2 by CPU
        ((1000, 1000, 1000, 1000), 64_000, 70_000, 2),  # ⌊70,000/32,768⌋ = 2 by memory
        ((190, 1000, 999, 0), 64_000, 262_144, 1),  # only GPU 1 is idle
        ((1000, 1000), None, None, 2),  # unknown CPU and memory limit nothing
        ((1000, 1000), -5, 262_144, 0),  # over-committed CPU holds none
    ],
)
def test_room_is_the_whole_gpu_pods_a_node_holds(
    free: tuple[int, ...], cpu: int | None, memory: int | None, expected: int
) -> None:
    assert room(free, cpu, memory, WANTS) == expected


@pytest.mark.parametrize(
    ("fleet", "expected"),
    [
        # W = 0.6 × 400,000 / 1000 = 240 whole GPUs to come; spread ½√240 = 7.746
        (Fleet(400_000, 240), 0.5),  # room for exactly W: even odds
        (Fleet(400_000, 225), 0.9736),  # z = 15 / 7.746 = 1.94
        (Fleet(400_000, 255), 0.0264),  # z = −1.94
        (Fleet(450_000, 225, waiting_milli=50_000), 0.9736),  # the 50 GPUs waiting are not still to come
        (Fleet(0, 0), 0.0),  # nothing to come
    ],
)
def test_an_idle_gpu_is_claimed_as_likely_as_the_whole_gpu_pods_to_come_outnumber_the_room(
    fleet: Fleet, expected: float
) -> None:
    assert claimed(fleet, WANTS) == pytest.approx(expected, abs=0.0005)


def test_a_gap_is_filled_by_the_part_of_the_gpu_pods_small_enough_for_it() -> None:
    assert fill(WANTS, 190) == pytest.approx(190 * 0.05)  # only the 100s fit
    assert fill(WANTS, 530) == pytest.approx(530 * (0.05 + 0.30))  # 100s and 470s
    assert fill(WANTS, 50) == 0


@pytest.mark.parametrize(
    ("milli", "room_", "held"),
    [
        # P at room 236: z = 4 / 7.746 = 0.516, P = 0.697; at room 230: z = 1.29, P = 0.902
        (810, 236, False),  # 697 < 810 + 190 × 0.05 = 819.5
        (810, 230, True),  # 902 > 819.5
        (470, 236, True),  # 697 > 470 + 530 × (0.05 + 0.30) = 655.5
        (470, 240, False),  # P = 0.5: 500 < 655.5
        (1000, 0, False),  # a whole GPU is never held
    ],
)
def test_a_share_is_held_when_the_room_is_worth_more_than_it_and_its_gap(milli: int, room_: int, held: bool) -> None:
    assert holds(WANTS, Fleet(400_000, room_), milli) is held


def _request(milli: int, gpus: int = 1, cpu: int = 8000, memory: int = 32768) -> PodRequest:
    return pod_request(replay_pod_object(PodShape(cpu, memory, gpus, milli)))


def test_the_demand_is_read_off_the_learned_mix() -> None:
    # 6 whole-GPU pods (8 cores, 32 GiB), one 2-GPU pod (20 cores, 64 GiB: 10 and 32 per GPU), 3 shares
    # of 500 milli: whole milli 6,000 + 2,000, share milli 1,500, so w = 8,000 / 9,500; 10 GPU pods
    pods = [_request(1000) for _ in range(6)] + [_request(1000, 2, 20_000, 65_536)] + [_request(500)] * 3
    mix = learned_from((f"p{i}", r) for i, r in enumerate(pods))
    found = demand(mix)
    assert found is not None
    assert found.whole_share == pytest.approx(8000 / 9500)
    assert (found.cpu_per_gpu, found.memory_per_gpu) == (8000, 32768)  # the median of 6 × 8 and 1 × 10 cores
    assert [milli for milli, _ in found.shares] == [500]
    assert found.shares[0][1] == pytest.approx(3 / 10)
    assert demand(mix) is found  # remembered on the mix


def test_without_whole_gpu_pods_there_is_nothing_to_hold_for() -> None:
    mix = learned_from((f"p{i}", _request(500)) for i in range(4))
    assert demand(mix) is None


@pytest.mark.parametrize(
    ("free", "cpu", "takes"),
    [
        ((1000, 1000), 64_000, True),  # best fit is an idle GPU: room 2 → 1
        ((600, 1000), 64_000, False),  # GPU 0 has 600: the share fits there, room stays 1
        ((1000, 1000), 10_000, False),  # CPU holds ⌊10/8⌋ = 1 before, ⌊8/8⌋ = 1 after, beside GPU 1 idle
    ],
)
def test_a_share_takes_room_when_it_leaves_fewer_whole_gpu_pods_a_place(
    free: tuple[int, ...], cpu: int, takes: bool
) -> None:
    assert takes_room(free, cpu, 262_144, (400, 2000, 4096), WANTS) is takes


def test_hold_turns_the_nodes_the_share_would_take_room_on_into_resolvable_refusals() -> None:
    machines = MachineTypes()
    idle = node_state(replay_node_object("idle", "G2", 64_000, 262_144, 2), (), machines)
    holder = bound_pod(replay_pod_object(PodShape(0, 0, 1, 500), "h", 0) | {"spec": {"nodeName": "half"}})
    assert holder is not None
    half = node_state(replay_node_object("half", "G2", 64_000, 262_144, 2), [holder[1]], machines)
    verdicts = [Verdict("idle", True, "fits", 7), Verdict("half", True, "fits", 5), Verdict("gone", False, "no")]
    nodes = {"idle": idle, "half": half}
    share = _request(400, cpu=2000, memory=4096)
    found, count = hold(share, verdicts, nodes, WANTS, Fleet(400_000, 230))
    assert count == 1
    assert (found[0].fits, found[0].unresolvable) == (False, False)  # it waits, and may pass later
    assert found[0].reason == (
        "held for whole-GPU pods: this 400-milli share would take room that the whole-GPU pods "
        "still to come are likely to need; it waits until they have come or room is back"
    )
    assert found[1:] == verdicts[1:]  # GPU 0 of "half" has 500 free: no idle GPU taken
    assert hold(share, verdicts, nodes, WANTS, Fleet(400_000, 260)) == (verdicts, 0)  # room enough
    assert hold(_request(1000), verdicts, nodes, WANTS, Fleet(400_000, 0)) == (verdicts, 0)  # whole GPUs


def test_a_share_is_worth_holding_for_only_while_its_p_is_high() -> None:
    # P × 1000 against 400 + 600 × 0.35 = 610: held from P = 0.61, z = 0.279, room 240 − 0.279 × 7.746
    assert holds(WANTS, Fleet(400_000, 237), 400) is True  # z = 0.387
    assert holds(WANTS, Fleet(400_000, 238), 400) is False  # z = 0.258
    assert math.isclose(claimed(Fleet(400_000, 238), WANTS), 0.6019, abs_tol=0.0005)


def test_nothing_is_held_before_the_sharing_gpus_are_80_percent_allocated() -> None:
    # W = 0.6 × 400 = 240 for room 230: P = 0.90 where 1,600 of 2,000 GPUs are allocated (80 %); where
    # 1,599 of 1,999 are (79.99 %), nothing is held
    assert holds(WANTS, Fleet(400_000, 230, 0, 2_000_000), 810) is True
    assert holds(WANTS, Fleet(400_000, 230, 0, 1_999_000), 810) is False
    assert claimed(Fleet(400_000, 230, 0, 1_999_000), WANTS) == 0.0
