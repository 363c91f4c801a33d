"""Placement tables (boards of up to 8 GPUs) and subset scores (up to 16): every answer is the one the
search gives."""

from __future__ import annotations

import random
from itertools import combinations

import pytest
from hypothesis import given, settings

from extender.model.machines import bundled_machines
from extender.model.smi_topo import parse_topo_matrix
from extender.model.topology import Gpu, GpuTopology, Link, PcieLevel
from extender.placement import POLICIES, Placer, PolicyName, Wiring
from extender.placement.matrix import bits
from tests.unit.test_placement import nvidia_reference, questions, wirings

Answer = tuple[PolicyName, int, int, int]  # policy, free mask, k, chosen mask
POLICY_NAMES: tuple[PolicyName, ...] = ("ideal", "nvidia-best-effort")
SMALL_MACHINES = {
    name: topo for name, text in bundled_machines().items() if len((topo := parse_topo_matrix(text)).indices) <= 8
}


def searched_and_tabled(topo: GpuTopology) -> tuple[list[Answer], list[Answer]]:
    """(policy, free mask, k, chosen mask) for every free set and k: by the search, and from the table."""
    searched, tabled = Wiring(topo, tables=False), Wiring(topo)
    assert tabled.table is not None and searched.table is None
    by_search: list[Answer] = []
    by_table: list[Answer] = []
    for policy in POLICY_NAMES:
        for free in range(1, 1 << len(topo.indices)):
            for k in range(1, free.bit_count() + 1):
                chosen = POLICIES[policy].choose(searched, free, 0, k)
                by_search.append((policy, free, k, sum(1 << p for p in chosen)))
                by_table.append((policy, free, k, tabled.table.choices[policy][k][free]))
    return by_search, by_table


@pytest.mark.parametrize("name", sorted(SMALL_MACHINES))
def test_the_table_of_a_real_machine_holds_the_searched_answer_for_every_free_set_and_size(name: str) -> None:
    by_search, by_table = searched_and_tabled(SMALL_MACHINES[name])
    # 8 GPUs: 255 non-empty free sets; each set of c GPUs has c sizes → 8 × 2^7 = 1024 answers per policy.
    assert len(by_table) == 2 * len(SMALL_MACHINES[name].indices) * 2 ** (len(SMALL_MACHINES[name].indices) - 1)
    assert by_table == by_search


@settings(max_examples=20, deadline=None)
@given(wirings(max_gpus=8))
def test_the_table_of_any_wiring_holds_the_searched_answer_for_every_free_set_and_size(topo: GpuTopology) -> None:
    by_search, by_table = searched_and_tabled(topo)
    assert by_table == by_search


@settings(max_examples=150, deadline=None)
@given(questions(max_gpus=8))
def test_tabled_best_effort_matches_nvidias_partition_search_exactly(q: tuple[GpuTopology, list[int], int]) -> None:
    topo, free, k = q
    if k > len(free):
        return
    placer = Placer()
    assert placer.wiring(topo).table is not None
    placement = placer.best_placement(topo, k, free=free, policy="nvidia-best-effort")
    assert placement.gpus == nvidia_reference(topo, free, k)


def test_a_tabled_answer_is_the_same_placement_as_a_searched_one_leaves_included() -> None:
    dgx1 = SMALL_MACHINES["dgx1-v100"]
    tabled, searched = Placer(), Placer(tables=False)
    for policy in POLICY_NAMES:
        for free in range(1, 256):
            gpus = bits(free)
            for k in range(1, len(gpus) + 1):
                one, other = tabled.assess(dgx1, k, gpus, policy), searched.assess(dgx1, k, gpus, policy)
                assert (one.placed(), one.nvlink_share) == (other.placed(), other.nvlink_share)
                assert (one.best_possible, one.before) == (other.best_possible, other.before)


def test_required_gpus_are_searched_not_tabled_and_still_honoured() -> None:
    placement = Placer().best_placement(SMALL_MACHINES["dgx1-v100"], 2, required=[5], policy="nvidia-best-effort")
    assert 5 in placement.gpus and len(placement.gpus) == 2


def test_boards_of_more_than_8_gpus_get_no_table() -> None:
    assert Wiring(GpuTopology([Gpu(i) for i in range(9)])).table is None


@settings(max_examples=60, deadline=None)
@given(questions(max_gpus=10))
def test_boards_of_9_to_16_gpus_searched_in_python_score_groups_from_the_subset_array_and_still_match_nvidia(
    q: tuple[GpuTopology, list[int], int],
) -> None:
    topo, free, k = q
    if k > len(free) or len(topo.indices) <= 8:
        return
    placer = Placer(compiled=False)  # what answers where the compiled kernel is not built
    assert placer.wiring(topo).set_scores is not None and placer.wiring(topo).table is None
    placement = placer.best_placement(topo, k, free=free, policy="nvidia-best-effort")
    assert placement.gpus == nvidia_reference(topo, free, k)


@pytest.mark.parametrize("seed", range(4))
def test_on_12_gpus_the_subset_array_search_picks_what_the_plain_search_picks(seed: int) -> None:
    rnd = random.Random(seed)
    levels = [None, *PcieLevel]
    links = [Link(a, b, rnd.choice([0, 0, 1, 2]), rnd.choice(levels)) for a, b in combinations(range(12), 2)]
    topo = GpuTopology([Gpu(i) for i in range(12)], links)
    fast, plain = Placer(compiled=False), Placer(tables=False)
    for _ in range(12):
        free = sorted(rnd.sample(range(12), rnd.randint(6, 12)))
        k = rnd.choice([2, 3, 4, 5, 6])
        if k <= len(free):
            for policy in POLICY_NAMES:
                assert fast.best_placement(topo, k, free, policy=policy) == plain.best_placement(
                    topo, k, free, policy=policy
                )
