"""Each baseline's integer formula on tiny hand-made nodes, the arithmetic written out."""

from __future__ import annotations

import pytest

from extender.advice.replay.baselines.best_fit import best_fit_raw, min_max_normalise
from extender.advice.replay.baselines.dot_product import dot_product_score
from extender.advice.replay.baselines.fgd import Fgd, frag_score, sigmoid
from extender.advice.replay.baselines.gpu_clustering import gpu_clustering_score
from extender.advice.replay.baselines.gpu_packing import gpu_packing_score
from extender.advice.replay.fragmentation import FragModel
from extender.advice.replay.specs import PodShape
from extender.advice.replay.workload import TypicalPod, Workload
from tests.replay.conftest import node, pod


@pytest.mark.parametrize(
    ("free_cpu", "gpus", "demand", "expected"),
    [
        # 100 * (1 - (0.5*(64000-8000)/128000 + 0.5*(2000-1000)/8000)) = 100 * (1 - 0.21875 - 0.0625) = 71.875 -> 71
        (64000, (1000, 1000), pod(8000, 1, 1000), 71),
        # 100 * (1 - (0.5*(16000-16000)/128000 + 0.5*(500-500)/8000)) = 100 -> 100 (a perfect fit)
        (16000, (500,), pod(16000, 1, 500), 100),
        # 100 * (1 - (0.5*(128000-0)/128000 + 0.5*(8000-0)/8000)) = 0 (CPU-less pod on an empty big node)
        (128000, (1000,) * 8, pod(0), 0),
    ],
)
def test_best_fit_raw_score_prefers_the_tightest_leftover(
    free_cpu: int, gpus: tuple[int, ...], demand: PodShape, expected: int
) -> None:
    assert best_fit_raw(node(free_cpu, gpus), demand) == expected


def test_best_fit_min_max_normalisation_maps_only_the_maximum_to_100() -> None:
    # (s - 40) * 100 // (90 - 40): 40 -> 0, 65 -> 50, 89 -> 98, 90 -> 100
    assert min_max_normalise([40, 65, 89, 90]) == [0, 50, 98, 100]
    assert min_max_normalise([7, 7]) == [0, 0]  # the simulator's oldRange == 0 case


@pytest.mark.parametrize(
    ("free_cpu", "gpus", "demand", "expected"),
    [
        # dot = (64000/128000)*(8000/128000) + (2000/8000)*(1000/8000) = 0.03125 + 0.03125 = 0.0625
        # 100 * (1 - 0.0625/2) = 96.875 -> 96
        (64000, (1000, 1000), pod(8000, 1, 1000), 96),
        # dot = (128000/128000)*(64000/128000) + (8000/8000)*(8000/8000) = 1.5; 100*(1 - 0.75) = 25
        (128000, (1000,) * 8, pod(64000, 8, 1000), 25),
        # CPU-only: dot = (32000/128000)*(4000/128000) = 0.0078125; 100*(1 - 0.00390625) = 99.609 -> 99
        (32000, (300,), pod(4000), 99),
    ],
)
def test_dot_product_prefers_the_smallest_free_times_demand(
    free_cpu: int, gpus: tuple[int, ...], demand: PodShape, expected: int
) -> None:
    assert dot_product_score(node(free_cpu, gpus), demand) == expected


@pytest.mark.parametrize(
    ("gpus", "demand", "expected"),
    [
        ((1000,) * 8, pod(1000), 0),  # CPU-only pod: 0
        ((1000,) * 8, pod(1000, 1, 500), 25),  # idle node, 8 GPUs: max(33 - 8, 8) = 25
        ((1000,) * 2, pod(1000, 1, 500), 31),  # idle node, 2 GPUs: max(33 - 2, 2) = 31
        ((0, 1000, 1000, 1000), pod(1000, 2, 1000), 48),  # used node, takes 2 free GPUs: max(50 - 2, 33) = 48
        ((0, 300, 1000, 1000), pod(1000, 1, 200), 97),  # fits on the 300 GPU: max(100 - (300*100//1000)//10, 50) = 97
        ((0, 600, 1000, 1000), pod(1000, 1, 500), 94),  # least-free fitting GPU 600: 100 - (60//10) = 94
        ((0, 1000), pod(1000, 1, 500), 49),  # only a fresh GPU on a used node: max(50 - 1, 33) = 49
    ],
)
def test_gpu_packing_fills_partly_used_gpus_then_used_nodes_then_idle_ones(
    gpus: tuple[int, ...], demand: PodShape, expected: int
) -> None:
    assert gpu_packing_score(node(64000, gpus), demand) == expected


@pytest.mark.parametrize(
    ("gpus", "tags", "demand", "expected"),
    [
        ((1000,) * 8, frozenset(), pod(1000), 0),  # CPU-only pod: 0
        # base = 25 * (8000 - 8000) // 8000 = 0; no GPU pod on the node: +25
        ((1000,) * 8, frozenset(), pod(1000, 1, 500), 25),
        # base = 25 * (8000 - 4000) // 8000 = 12; only `share` pods here: +75
        ((500,) * 8, frozenset({"share"}), pod(1000, 1, 500), 87),
        # base = 25 * 6000 // 8000 = 18 (18.75); `share` among others: +50
        ((250,) * 8, frozenset({"share", "1-gpu"}), pod(1000, 1, 500), 68),
        # base = 25 * 7000 // 8000 = 21 (21.875); other tags only: +0
        ((1000, 0, 0, 0, 0, 0, 0, 0), frozenset({"1-gpu"}), pod(1000, 1, 500), 21),
        # a 2-GPU pod's tag is `2-gpu`: base 0 + 75 on a node of 2-GPU pods only
        ((1000,) * 8, frozenset({"2-gpu"}), pod(1000, 2, 1000), 75),
    ],
)
def test_gpu_clustering_keeps_pods_of_one_kind_together(
    gpus: tuple[int, ...], tags: frozenset[str], demand: PodShape, expected: int
) -> None:
    assert gpu_clustering_score(node(64000, gpus, tags=tags), demand) == expected


# M: half CPU-only pods (2000 milli-CPU), half sharing pods (1000 milli-CPU, 500 milli-GPU).
_HALF_HALF = Workload((TypicalPod(2000, 0, 0, "", 0.5), TypicalPod(1000, 500, 1, "", 0.5)), 1.0)


def test_fgd_fragmentation_counts_small_gpus_and_all_gpus_for_unplaceable_pods() -> None:
    model = FragModel(_HALF_HALF)
    # CPU-only m: f = G = 2000 -> 0.5 * 2000; sharing m: no GPU below 500 -> 0.  F = 1000
    assert model.node(node(8000, (1000, 1000))) == 1000.0
    # CPU-only m: 0.5 * 1100; sharing m fits on GPU 0, GPU 1 (100) is too small: 0.5 * 100.  F = 600
    assert model.node(node(8000, (1000, 100))) == 600.0
    # 500 milli-CPU left: nothing fits, every free milli is fragment: 0.5 * 2000 + 0.5 * 2000 = 2000
    assert model.node(node(500, (1000, 1000))) == 2000.0


@pytest.mark.parametrize(
    ("gpus", "demand", "expected_score", "expected_gpu"),
    [
        # F: 1000 -> after (0, 1000), cpu 7000: 0.5*1000 + 0 = 500; drop 500: int(100*sigmoid(0.5)) = 62
        ((1000, 1000), pod(1000, 1, 1000), 62, -1),
        # GPU 0 -> (400, 700): 0.5*1100 + 0.5*400 = 750, drop 100 -> int(52.49) = 52
        # GPU 1 -> (1000, 100): 0.5*1100 + 0.5*100 = 600, drop 250 -> int(56.21) = 56: GPU 1 wins
        ((1000, 700), pod(1000, 1, 600), 56, 1),
        # CPU-only pod that crosses no CPU threshold: F unchanged, sigmoid(0) -> 50
        ((1000, 1000), pod(1000), 50, -1),
    ],
)
def test_fgd_scores_the_drop_in_fragmentation_and_tries_every_gpu_for_sharing_pods(
    gpus: tuple[int, ...], demand: PodShape, expected_score: int, expected_gpu: int
) -> None:
    scorer = Fgd(_HALF_HALF)
    state = node(8000, gpus)
    assert scorer.score(state, demand) == expected_score
    if expected_gpu >= 0:
        assert scorer.choose_gpu(state, demand) == expected_gpu


def test_fgd_score_is_a_truncated_sigmoid_of_the_drop_in_thousandths() -> None:
    assert sigmoid(0.0) == 0.5
    assert frag_score(1000.0, 1000.0) == 50
    assert frag_score(0.0, 1000.0) == 26  # 100 * sigmoid(-1) = 26.89
    assert frag_score(3000.0, 0.0) == 95  # 100 * sigmoid(3) = 95.26
