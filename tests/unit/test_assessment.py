"""One trip down per node: assess() answers what scoring asks, the same as asking piece by piece."""

from __future__ import annotations

import pytest

from extender.model.machines import bundled_machines
from extender.model.smi_topo import parse_topo_matrix
from extender.placement import PlacementImpossible, Placer, assess, best_placement, leaves_behind, nvlink_clique

MACHINES = bundled_machines()
DGX1 = parse_topo_matrix(MACHINES["dgx1-v100"])
L40S = parse_topo_matrix(MACHINES["l40s-pcie"])


def test_an_assessment_carries_the_set_its_score_its_nvlink_share_and_what_it_leaves() -> None:
    found = assess(DGX1, 2, free=[0, 2, 4, 5], policy="nvidia-best-effort", cliques=True)
    placement = found.placed()
    assert placement == best_placement(DGX1, 2, free=[0, 2, 4, 5], policy="nvidia-best-effort")
    # {0,2}: NV1 + NODE = 120; its one pair is NVLink, so the share is 1/1.
    assert placement.gpus == (0, 2) and placement.score == 120 and found.nvlink_share == 1.0 and found.all_nvlink
    # The best pair of the empty DGX-1: NV2 + NODE = 220.
    assert found.best_possible == 220
    assert found.before == leaves_behind(DGX1, [0, 2, 4, 5])
    assert found.node_clique == nvlink_clique(DGX1, 2) == (0, 1)
    assert found.free_clique == nvlink_clique(DGX1, 2, [0, 2, 4, 5]) == (0, 2)


def test_the_nvlink_share_counts_the_chosen_pairs_on_nvlink() -> None:
    # Ideal on the DGX-1 with 0,1,2,4 free takes 4 GPUs: pairs 0-1, 0-2, 0-4, 1-2 NVLink; 1-4, 2-4 not.
    found = assess(DGX1, 4, free=[0, 1, 2, 4])
    assert found.placed().gpus == (0, 1, 2, 4) and found.nvlink_share == 4 / 6 and not found.all_nvlink


def test_a_pcie_node_has_no_nvlink_clique_and_a_single_gpu_is_its_own_clique() -> None:
    assert assess(L40S, 2, cliques=True).node_clique is None
    assert assess(L40S, 1, free=[3, 5], cliques=True).free_clique == (3,)


def test_cliques_are_left_out_unless_asked_for() -> None:
    found = assess(DGX1, 2)
    assert found.node_clique is None and found.free_clique is None


def test_an_impossible_request_is_an_assessment_that_says_why() -> None:
    found = assess(DGX1, 3, free=[0, 1], cliques=True)
    assert found.placement is None and found.problem == "asked for 3 GPUs but only 2 of 8 are free"
    assert found.node_clique == (0, 1, 2)  # the node could, just not now
    with pytest.raises(PlacementImpossible, match="only 2 of 8 are free"):
        found.placed()


def test_a_placer_remembers_answers_per_wiring_and_a_fresh_one_starts_empty() -> None:
    placer = Placer()
    first = placer.assess(DGX1, 2, free=[0, 2, 4, 5])
    # Same wiring parsed again (a second node of the type): one wiring, the same answer object.
    twin = parse_topo_matrix(MACHINES["dgx1-v100"])
    assert placer.wiring(twin) is placer.wiring(DGX1)
    assert placer.assess(twin, 2, free=[5, 4, 2, 0]) is first
    assert Placer().assess(DGX1, 2, free=[0, 2, 4, 5]) is not first


def test_bad_input_is_refused_with_a_reason() -> None:
    with pytest.raises(PlacementImpossible, match="free GPU 9 is not on this node"):
        assess(DGX1, 2, free=[0, 9])
    with pytest.raises(PlacementImpossible, match="unknown policy"):
        assess(DGX1, 2, policy="greedy")  # type: ignore[arg-type]
