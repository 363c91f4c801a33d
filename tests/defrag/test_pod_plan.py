"""The fewest moves that make a pending pod placeable, each feasible after the ones before it."""

from __future__ import annotations

import pytest

from extender.advice.defrag import DefragError, for_pod, movable_pods
from tests.defrag.objects import judge, node, pod, world


def test_one_move_frees_a_pair_for_a_two_gpu_pod() -> None:
    # a: 2 GPUs − 1 held = 1 free < 2 asked; b the same. Moving a/p to b (1 free ≥ 1): a has 2 free.
    pods = [pod("p", 1, "a"), pod("q", 1, "b")]
    plan = for_pod(world([node("a", 2), node("b", 2)], pods), pod("big", 2), movable_pods(pods), judge(), 3)
    assert plan.found and plan.placed_on == "a"
    assert [(m.pod, m.source, m.target) for m in plan.moves] == [("ml/p", "a", "b")]
    assert plan.verdict == "placeable on a after 1 move: ml/p a → b"


def test_two_moves_when_two_pods_sit_on_the_only_node_big_enough() -> None:
    # big: 4 GPUs − 2 held = 2 free < 4 asked; c has 2 free: both pods must go there (2 moves).
    pods = [pod("p", 1, "big"), pod("q", 1, "big")]
    cluster = world([node("big", 4), node("c", 2)], pods)
    short = for_pod(cluster, pod("quad", 4), movable_pods(pods), judge(), 1)
    assert not short.found and short.verdict.startswith("no plan within 1 move(s): 2 arrangement(s) judged")
    plan = for_pod(cluster, pod("quad", 4), movable_pods(pods), judge(), 2)
    assert [(m.pod, m.target) for m in plan.moves] == [("ml/p", "c"), ("ml/q", "c")]
    assert plan.placed_on == "big"


def test_pods_that_may_not_move_leave_no_plan_and_say_why() -> None:
    pods = [pod("p", 1, "a", owner=None), pod("q", 1, "b", owner=None)]
    plan = for_pod(world([node("a", 2), node("b", 2)], pods), pod("big", 2), movable_pods(pods), judge(), 2)
    assert not plan.found and plan.moves == []
    assert plan.verdict.startswith("no plan: no pod may move off the 2 node(s)")
    assert {(x.pod, x.why) for x in plan.left_alone} == {
        ("ml/p", "a bare pod: no controller would recreate it"),
        ("ml/q", "a bare pod: no controller would recreate it"),
    }


def test_a_pdb_allowing_one_disruption_stops_a_plan_that_needs_two() -> None:
    pods = [pod("p", 1, "big", labels={"app": "x"}), pod("q", 1, "big", labels={"app": "x"})]
    pdb = {"metadata": {"name": "x", "namespace": "ml"}, "spec": {"selector": {"matchLabels": {"app": "x"}}}}
    pdb["status"] = {"disruptionsAllowed": 1}
    cluster = world([node("big", 4), node("c", 2)], pods)
    plan = for_pod(cluster, pod("quad", 4), movable_pods(pods, [pdb]), judge(), 3)
    assert not plan.found


def test_a_pod_that_fits_already_needs_no_plan() -> None:
    with pytest.raises(DefragError, match="ml/small fits already on a; nothing to move"):
        for_pod(world([node("a", 2)], []), pod("small", 1), movable_pods([]), judge(), 1)


@pytest.mark.parametrize("budget", [0, -1])
def test_a_budget_below_one_is_refused(budget: int) -> None:
    with pytest.raises(DefragError, match="at least 1 move"):
        for_pod(world([node("a", 2)], []), pod("big", 4), movable_pods([]), judge(), budget)
