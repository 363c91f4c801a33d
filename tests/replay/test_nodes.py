"""Filter and GPU placement rules of the simulator (PROTOCOL.md section 2)."""

from __future__ import annotations

import pytest

from extender.advice.replay.go_random import GoRandom
from extender.advice.replay.nodes import best_fit_gpu, exclusive_gpus, fits, place, random_gpu, subtract_packed
from extender.advice.replay.specs import PodShape
from tests.replay.conftest import node, pod


@pytest.mark.parametrize(
    ("gpus", "model", "demand", "expected"),
    [
        ((1000, 1000), "G2", pod(64001), False),  # CPU does not fit
        ((1000, 1000), "G2", pod(1000, mem=2 << 20), False),  # memory does not fit
        ((300, 200), "G2", pod(1000, 1, 400), False),  # no GPU with 400 free
        ((300, 400), "G2", pod(1000, 1, 400), True),  # GPU 1 has exactly 400
        ((1000, 999, 1000), "G2", pod(1000, 3, 1000), False),  # only 2 fully free GPUs
        ((1000, 1000), "T4", pod(1000, 1, 1000, "G2|P100"), False),  # model not in gpu_spec
        ((1000, 1000), "P100", pod(1000, 1, 1000, "G2|P100"), True),
        ((), "", pod(1000), True),  # CPU-only pods need no GPU
        ((), "", pod(1000, 1, 100), False),  # GPU pods need a GPU node
    ],
)
def test_fits_applies_cpu_memory_model_and_gpu_rules(
    gpus: tuple[int, ...], model: str, demand: PodShape, expected: bool
) -> None:
    assert fits(node(64000, gpus, model), demand) is expected


def test_best_gpu_is_the_least_free_that_fits_lowest_index_on_ties() -> None:
    assert best_fit_gpu(node(1, (1000, 400, 300, 400)), 350) == 1
    assert best_fit_gpu(node(1, (1000, 1000)), 500) == 0


def test_random_gpu_only_draws_gpus_that_fit() -> None:
    rng = GoRandom(1)
    assert {random_gpu(node(1, (100, 900, 50, 600)), 500, rng) for _ in range(50)} == {1, 3}


def test_random_gpu_draws_once_per_fitting_gpu_like_the_simulators_reservoir() -> None:
    # GPUs 1 and 3 fit: Intn(1) (always 0: GPU 1), then Intn(2) replaces it with GPU 3 when it draws 0.
    mirror, rng = GoRandom(5), GoRandom(5)
    mirror.intn(1)
    expected = 3 if mirror.intn(2) == 0 else 1
    assert random_gpu(node(1, (100, 900, 50, 600)), 500, rng) == expected
    assert rng.int63() == mirror.int63()  # two draws taken, no more


def test_whole_gpu_pods_take_the_lowest_index_fully_free_gpus() -> None:
    assert exclusive_gpus(node(1, (500, 1000, 0, 1000, 1000)), 2) == (1, 3)
    placed = place(node(8000, (500, 1000, 0, 1000, 1000)), pod(1000, 2, 1000, mem=10))
    assert placed.gpus == (500, 0, 0, 0, 1000)
    assert (placed.cpu_free, placed.mem_free, placed.tags) == (7000, (1 << 20) - 10, frozenset({"2-gpu"}))


def test_sharing_pod_goes_on_the_given_gpu_and_cpu_pods_leave_gpus_and_tags_alone() -> None:
    assert place(node(8000, (1000, 700)), pod(1000, 1, 600), 1).gpus == (1000, 100)
    cpu_only = place(node(8000, (1000, 700), tags=frozenset({"share"})), pod(3000))
    assert (cpu_only.gpus, cpu_only.cpu_free, cpu_only.tags) == ((1000, 700), 5000, frozenset({"share"}))
    with pytest.raises(ValueError, match="cannot take"):
        place(node(8000, (1000, 700)), pod(1000, 1, 800), 1)


def test_packed_subtraction_takes_the_least_free_gpus_that_fit() -> None:
    # FGD's hypothetical state for whole-GPU pods: sorted ascending (stable), first fitting ones.
    assert subtract_packed(node(1, (1000, 200, 1000, 1000)), pod(1, 2, 1000)) == (0, 200, 0, 1000)
