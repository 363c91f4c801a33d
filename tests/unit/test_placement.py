"""Placement on real machines, and both policies proven against brute force."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.model.machines import bundled_machines
from extender.model.smi_topo import parse_topo_matrix
from extender.model.topology import Gpu, GpuTopology, Link, PcieLevel
from extender.placement import PlacementImpossible, best_placement, leaves_behind, pair_score, set_score

MACHINES = bundled_machines()
DGX1 = parse_topo_matrix(MACHINES["dgx1-v100"])
H100 = parse_topo_matrix(MACHINES["hgx-h100"])
L40S = parse_topo_matrix(MACHINES["l40s-pcie"])
A6000 = parse_topo_matrix(MACHINES["rtx-a6000-bridge"])


# -- requirements on real machines -------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["ideal", "nvidia-best-effort"])
def test_dgx1_a_4_gpu_request_gets_an_nvlink_connected_quad(policy: str) -> None:
    placement = best_placement(DGX1, 4, policy=policy)  # type: ignore[arg-type]
    assert placement.gpus == (0, 1, 2, 3)
    # Pairs 0-1 NV1, 0-2 NV1, 0-3 NV2, 1-2 NV2, 1-3 NV1, 2-3 NV2: 9 NVLinks × 100 + 6 NODE pairs × 20
    assert placement.score == 9 * 100 + 6 * 20 == 1020
    assert placement.leaves.free == (4, 5, 6, 7) and placement.leaves.largest_nvlink_island == 4


def test_dgx1_with_0_2_4_5_free_a_pair_gets_an_nvlink_pair_and_leaves_an_nvlink_pair() -> None:
    # NVIDIA's partition policy: {0,2} NV1+NODE = 120 with {4,5} NV1+NODE = 120 → 240 beats
    # {0,4} NV2+SYS = 210 with {2,5} SYS = 10 → 220, and {0,5}+{2,4}: 10 + 10 = 20.
    placement = best_placement(DGX1, 2, free=[0, 2, 4, 5], policy="nvidia-best-effort")
    assert placement.gpus == (0, 2) and placement.score == 100 + 20
    assert placement.leaves.free == (4, 5) and placement.leaves.largest_nvlink_island == 2
    assert placement.leaves.best_score[2] == 100 + 20


def test_dgx1_ideal_takes_the_double_nvlink_pair_for_the_pod_itself() -> None:
    # The ideal policy maximises this pod's set: {0,4} NV2 + SYS = 200 + 10 = 210 > {0,2} NV1 + NODE = 120.
    placement = best_placement(DGX1, 2, free=[0, 2, 4, 5])
    assert placement.gpus == (0, 4) and placement.score == 210
    assert placement.leaves.best_score[2] == 10, "what is left is a SYS pair: the fragmentation scoring sees"


def test_dgx1_ideal_breaks_score_ties_by_the_best_pair_left_behind() -> None:
    # With 0,1,2,3 free, NV2 pairs are 0-3, 1-2, 2-3 (200 + NODE 20 = 220 each). Taking 0-3 leaves 1-2
    # (220); taking 1-2 leaves 0-3 (220); taking 2-3 leaves 0-1 (NV1: 120). So 2-3 must not be picked.
    placement = best_placement(DGX1, 2, free=[0, 1, 2, 3])
    assert placement.score == 220 and placement.gpus in {(0, 3), (1, 2)}
    assert placement.leaves.best_score[2] == 220


def test_a_single_gpu_request_breaks_no_nvlink_pair() -> None:
    # RTX A6000 box: 0-1 bridged (NV4), 2 alone. Connectivity: GPU2 = NODE+NODE = 40, GPU0 = 400+20+20 = 440.
    assert best_placement(A6000, 1).gpus == (2,)
    assert best_placement(A6000, 1).leaves.largest_nvlink_island == 2


def test_a_single_gpu_request_on_the_dgx1_takes_the_worst_connected_free_gpu() -> None:
    # Free 0,1,3,4: GPU0 links 0-1 NV1 NODE (120), 0-3 NV2 NODE (220), 0-4 NV2 SYS (210) = 550;
    # GPU1: 120 + 1-3 NV1 NODE 120 + 1-4 SYS 10 = 250; GPU3: 220+120+SYS 10 = 350; GPU4: 210+10+10 = 230.
    assert best_placement(DGX1, 1, free=[0, 1, 3, 4]).gpus == (4,)


def test_hgx_h100_nvswitch_pairs_score_their_18_links_and_prefer_one_socket() -> None:
    placement = best_placement(H100, 4)
    # Every pair NV18 (1800) plus NODE (20) within a socket: 6 pairs × 1820
    assert placement.gpus == (0, 1, 2, 3) and placement.score == 6 * (1800 + 20)
    assert best_placement(H100, 4, policy="nvidia-best-effort").gpus == (0, 1, 2, 3)


def test_l40s_pcie_keeps_a_pair_on_one_socket() -> None:
    placement = best_placement(L40S, 2, free=[0, 4, 5])
    assert placement.gpus == (4, 5) and placement.score == 20  # NODE 20 beats SYS 10


def test_five_free_gpus_and_three_asked_returns_three_not_the_padded_pair() -> None:
    # 0-1 NV12 over SYS (1210); 2,3,4 mutually PIX (50); everything else SYS (10). NVIDIA pads to 6 and
    # keeps {0,1,pad} + {2,3,4} = 1210 + 150 = 1360 over {0,1,2} + {3,4,pad} = 1230 + 50 = 1280, then
    # returns its best-scoring group, the padded pair {0,1}: two GPUs for a three-GPU request.
    links = [Link(0, 1, 12, PcieLevel.SYS)] + [Link(a, b, 0, PcieLevel.PIX) for a, b in combinations([2, 3, 4], 2)]
    links += [Link(a, b, 0, PcieLevel.SYS) for a in (0, 1) for b in (2, 3, 4)]
    topo = GpuTopology([Gpu(i) for i in range(5)], links)
    placement = best_placement(topo, 3, policy="nvidia-best-effort")
    assert placement.gpus == (2, 3, 4) and placement.score == 150


@pytest.mark.parametrize(
    ("k", "free", "required", "reason"),
    [
        (4, [0, 1, 2], [], "asked for 4 GPUs but only 3 of 8 are free"),
        (2, [0, 1], [4], "required GPU 4 is not free"),
        (2, [0, 1, 2], [0, 1, 2], "3 GPUs are required but only 2 asked for"),
        (0, None, [], "at least 1"),
        (2, [0, 9], [], "free GPU 9 is not on this node"),
    ],
)
def test_impossible_requests_say_why(k: int, free: list[int] | None, required: list[int], reason: str) -> None:
    for policy in ("ideal", "nvidia-best-effort"):
        with pytest.raises(PlacementImpossible, match=reason):
            best_placement(DGX1, k, free=free, required=required, policy=policy)


def test_required_gpus_are_always_in_the_set() -> None:
    for policy in ("ideal", "nvidia-best-effort"):
        placement = best_placement(DGX1, 2, required=[5], policy=policy)
        assert 5 in placement.gpus and len(placement.gpus) == 2


def test_fragmentation_of_a_free_set_reports_what_2_4_8_gpu_requests_could_get() -> None:
    leaves = leaves_behind(DGX1, [4, 5, 6, 7])
    assert leaves.best_score == {2: 220, 4: 1020, 8: None}
    assert leaves.quality == {2: 1.0, 4: 1.0, 8: 0.0}
    scattered = leaves_behind(DGX1, [0, 5, 6, 3])  # 0-3 NV2 NODE (220), 5-6 NV2 NODE (220)
    # 0-3 NV2 NODE 220, 5-6 NV2 NODE 220, and the cross-socket pairs 0-5, 0-6, 3-5, 3-6 SYS 10 each
    assert scattered.best_score[4] == 220 + 220 + 4 * 10 == 480
    assert scattered.quality[4] == pytest.approx(480 / 1020)


# -- properties against brute force -------------------------------------------------------------------


@st.composite
def wirings(draw: st.DrawFn, max_gpus: int = 10) -> GpuTopology:
    n = draw(st.integers(min_value=1, max_value=max_gpus))
    levels = st.sampled_from([None, *PcieLevel])
    # Few distinct values on purpose: ties are where policies differ.
    links = [Link(a, b, draw(st.sampled_from([0, 0, 1, 2])), draw(levels)) for a, b in combinations(range(n), 2)]
    return GpuTopology([Gpu(i) for i in range(n)], links)


@st.composite
def questions(draw: st.DrawFn, max_gpus: int = 10) -> tuple[GpuTopology, list[int], int]:
    topo = draw(wirings(max_gpus))
    free = sorted(draw(st.sets(st.sampled_from(topo.indices), min_size=1)))
    k = draw(st.integers(min_value=1, max_value=len(free) + 1))
    return topo, free, k


def brute_best_score(topo: GpuTopology, free: list[int], k: int) -> int | None:
    if k > len(free):
        return None
    return max(set_score(topo, c) for c in combinations(free, k))


@settings(max_examples=150, deadline=None)
@given(questions())
def test_ideal_score_equals_brute_force_and_ties_follow_the_rule(q: tuple[GpuTopology, list[int], int]) -> None:
    topo, free, k = q
    if k > len(free):
        with pytest.raises(PlacementImpossible, match=f"asked for {k} GPUs"):
            best_placement(topo, k, free=free)
        return
    placement = best_placement(topo, k, free=free)
    assert len(placement.gpus) == k and set(placement.gpus) <= set(free)
    assert placement.score == set_score(topo, placement.gpus)
    if k == 1:
        return
    assert placement.score == brute_best_score(topo, free, k)

    def key(chosen: tuple[int, ...]) -> tuple[int, int]:
        left = [g for g in free if g not in chosen]
        best_left = brute_best_score(topo, left, k)
        return (set_score(topo, chosen), -1 if best_left is None else best_left)

    assert key(placement.gpus) == max(key(c) for c in combinations(free, k))


def nvidia_reference(topo: GpuTopology, free: list[int], k: int) -> tuple[int, ...]:
    """go-gpuallocator's best-effort Allocate, transcribed literally (padding, iteration order, strict >),
    with only its padded-group answer replaced by the best unpadded group of the same partition."""
    devices: list[int | None] = list(free)
    if k == 1:
        return (free[0],)
    while len(devices) % k:
        devices.append(None)
    padding = devices.count(None)

    def score(group: list[int | None]) -> int:
        real = [g for g in group if g is not None]
        return sum(pair_score(topo.link(a, b)) for a, b in combinations(real, 2))

    best: list[list[int | None]] | None = None
    best_total = 0

    def iterate(devs: list[int | None], accum: list[list[int | None]]) -> None:
        nonlocal best, best_total
        if len(devs) == k:
            partition = [*accum, devs]
            total = sum(score(g) for g in partition)
            if best is None or total > best_total:
                best, best_total = partition, total
            return
        for combo in combinations(devs[1:], k - 1):
            group = [devs[0], *combo]
            if group.count(None) not in (0, padding):
                continue
            rest = [d for d in devs if d not in group] if None not in group else _without(devs, group)
            iterate(rest, [*accum, group])

    iterate(devices, [])
    assert best is not None
    candidates = [g for g in best if None not in g]
    top = candidates[0]
    for group in candidates[1:]:
        if score(group) > score(top):
            top = group
    return tuple(sorted(g for g in top if g is not None))


def _without(devs: list[int | None], group: list[int | None]) -> list[int | None]:
    rest = list(devs)
    for g in group:
        rest.remove(g)
    return rest


@settings(max_examples=150, deadline=None)
@given(questions(max_gpus=8))
def test_best_effort_matches_nvidias_partition_search_exactly(q: tuple[GpuTopology, list[int], int]) -> None:
    topo, free, k = q
    if k > len(free):
        return
    placement = best_placement(topo, k, free=free, policy="nvidia-best-effort")
    assert placement.gpus == nvidia_reference(topo, free, k)
    assert len(placement.gpus) == k and set(placement.gpus) <= set(free)


@settings(max_examples=60, deadline=None)
@given(questions(max_gpus=8), st.data())
def test_required_gpus_are_honoured_or_refused_clearly(
    q: tuple[GpuTopology, list[int], int], data: st.DataObject
) -> None:
    topo, free, k = q
    required = data.draw(st.lists(st.sampled_from(topo.indices), max_size=2, unique=True))
    for policy in ("ideal", "nvidia-best-effort"):
        try:
            placement = best_placement(topo, k, free=free, required=required, policy=policy)
        except PlacementImpossible as exc:
            assert str(exc) and "\n" not in str(exc)
            continue
        assert len(placement.gpus) == k and set(required) <= set(placement.gpus) <= set(free)
