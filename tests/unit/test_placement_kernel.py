"""The compiled subset tables for boards of 9 to 16 GPUs: the same answers as the Python search, faster."""

from __future__ import annotations

import os
import random
from array import array
from collections.abc import Callable
from itertools import combinations
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.model.machines import bundled_machines
from extender.model.smi_topo import parse_topo_matrix
from extender.model.topology import Gpu, GpuTopology, Link, PcieLevel
from extender.placement import Placer, PolicyName, Wiring, subsets
from extender.placement.matrix import matrix_of
from extender.placement.subsets import KERNEL_BUILT, subset_tables
from extender.placement.table import pair_sums
from tests.unit.test_placement import nvidia_reference

POLICY_NAMES: tuple[PolicyName, ...] = ("ideal", "nvidia-best-effort")
LEVELS = [None, *PcieLevel]


def random_board(n: int, seed: int) -> GpuTopology:
    rnd = random.Random(seed)
    # Few distinct values on purpose: ties are where the policies' orders matter.
    links = [Link(a, b, rnd.choice([0, 0, 1, 2]), rnd.choice(LEVELS)) for a, b in combinations(range(n), 2)]
    return GpuTopology([Gpu(i) for i in range(n)], links)


def two_dgx1() -> GpuTopology:
    """Two DGX-1 hybrid cube meshes as one 16-GPU node, SYS between the halves."""
    one = parse_topo_matrix(bundled_machines()["dgx1-v100"])
    links = [Link(lk.a + off, lk.b + off, lk.nvlinks, lk.pcie) for off in (0, 8) for lk in one.links]
    links += [Link(a, b, 0, PcieLevel.SYS) for a in range(8) for b in range(8, 16)]
    return GpuTopology([Gpu(i) for i in range(16)], links)


def test_the_kernel_is_built_where_the_tests_run() -> None:
    """CI (``.ci/run`` installs the compiler) must build it; elsewhere its absence is said, not hidden."""
    if not KERNEL_BUILT:
        message = (
            "extender/placement/_kernel.c was not compiled: install a C compiler and the Python headers"
            " (apt-get install gcc python3-dev) and reinstall with pip install -e ."
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


def test_a_4_gpu_board_tables_hold_the_arithmetic() -> None:
    # Pairs: 0-1 NV2 NODE = 2 × 100 + 20 = 220, 2-3 NV1 PIX = 100 + 50 = 150, the other four SYS = 10.
    links = [Link(0, 1, 2, PcieLevel.NODE), Link(2, 3, 1, PcieLevel.PIX)]
    links += [Link(a, b, 0, PcieLevel.SYS) for a, b in [(0, 2), (0, 3), (1, 2), (1, 3)]]
    tables = subset_tables(matrix_of(GpuTopology([Gpu(i) for i in range(4)], links)))
    assert tables is not None
    assert tables.score[0b0011] == 220 and tables.score[0b1100] == 150
    assert tables.score[0b0111] == 220 + 10 + 10  # 0-1, 0-2, 1-2
    assert tables.score[0b1111] == 220 + 150 + 4 * 10
    assert tables.best_score(0b1111, 2) == 220  # the NV2 pair
    assert tables.best_score(0b1110, 2) == 150  # without GPU 0: the NV1 pair
    assert tables.best_score(0b1111, 3) == 220 + 10 + 10  # the pair and any third GPU
    # NVIDIA's pairs of 0-3: {0,1}+{2,3} = 370 beats {0,2}+{1,3} = 20 and {0,3}+{1,2} = 20; the
    # best-scoring pair of that partition is 0-1.
    assert tables.nvidia(0b1111, 2) == 0b0011
    # ideal, 2 of 1-3: 2-3 (150) beats 1-2 and 1-3 (10 each).
    assert tables.ideal(0b1110, 2) == 0b1100


def test_the_kernel_scores_every_mask_as_the_python_doubling_does() -> None:
    m = matrix_of(random_board(12, seed=1))
    tables = subset_tables(m)
    assert tables is not None
    assert list(tables.score) == pair_sums(m.w)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=9, max_value=11), st.integers(min_value=0, max_value=10**6), st.data())
def test_on_9_to_11_gpus_the_kernel_gives_the_searched_assessment(n: int, seed: int, data: st.DataObject) -> None:
    topo = random_board(n, seed)
    compiled, searched = Placer(), Placer(compiled=False)
    assert compiled.wiring(topo).subsets is not None and searched.wiring(topo).subsets is None
    free = sorted(data.draw(st.sets(st.sampled_from(topo.indices), min_size=2)))
    k = data.draw(st.integers(min_value=2, max_value=len(free)))
    for policy in POLICY_NAMES:
        one, other = compiled.assess(topo, k, free, policy), searched.assess(topo, k, free, policy)
        assert (one.placed(), one.nvlink_share) == (other.placed(), other.nvlink_share)
        assert (one.best_possible, one.before) == (other.best_possible, other.before)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=9, max_value=10), st.integers(min_value=0, max_value=10**6), st.data())
def test_on_9_and_10_gpus_the_kernel_picks_what_nvidias_allocator_picks(n: int, seed: int, data: st.DataObject) -> None:
    topo = random_board(n, seed)
    free = sorted(data.draw(st.sets(st.sampled_from(topo.indices), min_size=1)))
    k = data.draw(st.integers(min_value=1, max_value=len(free)))
    placement = Placer().best_placement(topo, k, free, policy="nvidia-best-effort")
    assert placement.gpus == nvidia_reference(topo, free, k)


@pytest.mark.parametrize("board", ["two DGX-1", "random"])
def test_on_16_gpus_the_kernel_picks_what_the_python_search_picks(board: str) -> None:
    topo = two_dgx1() if board == "two DGX-1" else random_board(16, seed=7)
    compiled, searched = Placer(), Placer(compiled=False)
    rnd = random.Random(16)
    for _ in range(6):
        free = sorted(rnd.sample(range(16), rnd.randint(9, 13)))
        k = rnd.choice([2, 3, 4, 8])
        for policy in POLICY_NAMES:
            one, other = compiled.assess(topo, k, free, policy), searched.assess(topo, k, free, policy)
            assert (one.placed(), one.nvlink_share) == (other.placed(), other.nvlink_share)


def test_required_gpus_on_a_kernel_board_are_searched_and_honoured() -> None:
    topo = random_board(12, seed=3)
    for policy in POLICY_NAMES:
        placement = Placer().best_placement(topo, 3, range(12), required=[11], policy=policy)
        assert 11 in placement.gpus and len(placement.gpus) == 3


def test_a_board_whose_scores_overflow_a_c_int_is_searched_instead() -> None:
    # 9 GPUs × 36 pairs × 10^8 NVLinks × 100 is far past 2^31 - 1.
    links = [Link(a, b, 10**8, PcieLevel.SYS) for a, b in combinations(range(9), 2)]
    topo = GpuTopology([Gpu(i) for i in range(9)], links)
    assert Wiring(topo).subsets is None
    assert Placer().best_placement(topo, 2).score == 10**10 + 10


def test_without_the_kernel_the_python_search_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subsets, "_kernel", None)
    topo = random_board(10, seed=4)
    wiring = Wiring(topo)
    assert wiring.subsets is None and wiring.set_scores is not None
    assert Placer().best_placement(topo, 4, policy="nvidia-best-effort").gpus == nvidia_reference(
        topo, list(range(10)), 4
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda k: k.scores(array("i", [0] * 4), 3), "n x n"),
        (lambda k: k.best_sets(array("i", [0] * 8), 17, 2), "1 to 16 GPUs"),
        (lambda k: k.best_sets(array("i", [0] * 7), 3, 2), "one C int per mask"),
        (lambda k: k.partitions(array("i", [0] * 8), 3, 4), "k must be 1 to 3"),
        (lambda k: k.ideal_choice(array("i", [0] * 8), array("i", [0] * 8), array("i", [0]), 3, 2, 7), "adjacency"),
    ],
)
def test_the_kernel_refuses_tables_of_the_wrong_shape_with_a_value_error(
    call: Callable[[ModuleType], object], message: str
) -> None:
    from extender.placement import _kernel

    with pytest.raises(ValueError, match=message):
        call(_kernel)
