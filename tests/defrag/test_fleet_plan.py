"""Greedy moves that strand less of the fleet, as the advisor's own stranding measure counts it."""

from __future__ import annotations

from extender.advice.defrag import for_fleet, movable_pods
from extender.model.pods import pod_request
from extender.scoring.workload import learned_from
from tests.defrag.objects import judge, node, pod, world

# The fleet sees only 2-GPU pods: a lone free GPU is stranded whole (1000 milli).
PAIRS = learned_from([(f"ml/pair-{i}", pod_request(pod(f"pair-{i}", 2))) for i in range(4)])


def test_one_move_joins_two_lone_gpus_into_a_usable_pair() -> None:
    # before: a and b each 1 free GPU, useless to a 2-GPU pod: 1000 + 1000 = 2000 milli stranded.
    # after moving ml/p a → b: a 2 free (a pair fits: 0 stranded), b 0 free: 0 milli.
    pods = [pod("p", 1, "a"), pod("q", 1, "b")]
    plan = for_fleet(world([node("a", 2), node("b", 2)], pods), movable_pods(pods), judge(PAIRS), 5)
    assert plan.found and plan.stranded_before == 2000.0 and plan.stranded_after == 0.0
    assert [(m.pod, m.source, m.target) for m in plan.moves] == [("ml/p", "a", "b")]
    assert plan.verdict == "1 move strand 2000 milli-GPU less: 2000 → 0"


def test_no_move_when_nothing_is_stranded() -> None:
    pods = [pod("p", 2, "a")]
    plan = for_fleet(world([node("a", 2), node("b", 2)], pods), movable_pods(pods), judge(PAIRS), 5)
    assert not plan.found and plan.stranded_before == 0.0
    assert plan.verdict == "no plan: no move of the 1 movable pod(s) strands less (within 5)"


def test_no_movable_pod_is_said_plainly() -> None:
    pods = [pod("p", 1, "a", owner=None), pod("q", 1, "b", owner=None)]
    plan = for_fleet(world([node("a", 2), node("b", 2)], pods), movable_pods(pods), judge(PAIRS), 5)
    assert not plan.found and plan.verdict == "no plan: no pod may move (2 GPU pod(s) left alone)"
