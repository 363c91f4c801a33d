"""The replay loop: ties, drops, hooks, and that incremental scoring decides exactly like a full scan."""

from __future__ import annotations

import random
from collections.abc import Sequence

from extender.advice.replay.baselines import POLICIES
from extender.advice.replay.engine import replay
from extender.advice.replay.nodes import NodeState, fits
from extender.advice.replay.scorer import RunContext
from extender.advice.replay.specs import ArrivalOrder, NodeSpec, Pod, PodShape
from extender.advice.replay.workload import typical_pods
from tests.replay.conftest import pod

_NODES = (NodeSpec("n0", 8000, 64, 2, "G2"), NodeSpec("n1", 8000, 64, 2, "G2"), NodeSpec("n2", 4000, 64, 1, "T4"))


def _order(shapes: Sequence[PodShape], ranks: tuple[int, ...] = (2, 0, 1), seed: int = 1) -> ArrivalOrder:
    return ArrivalOrder(seed, tuple(Pod(f"p{i}", s) for i, s in enumerate(shapes)), ranks)


class _Constant:
    """A scorer from elsewhere: every node alike, so the rank decides."""

    name = "Constant"

    def prepare(self, context: RunContext) -> None:
        pass

    def score(self, node: NodeState, pod: PodShape) -> int:
        return 7


def test_equal_scores_go_to_the_smallest_rank_and_unplaceable_pods_are_dropped() -> None:
    order = _order([pod(1000, 1, 1000), pod(1000, 2, 1000), pod(1000, 1, 1000, "A10")])
    result = replay(_NODES, order, _Constant(), original_pods=order.pods)
    # ranks (2, 0, 1): the 1-GPU pod goes to n1 (rank 0); the 2-GPU pod then fits only n0; no A10 anywhere
    assert result.placements == (1, 0, -1)
    assert result.arrived == (1000, 3000, 4000)
    assert result.used == (1000, 3000, 3000)
    assert result.dropped == 1


class _NamedTies(_Constant):
    """Every node alike, ties broken as the live extender breaks them (``ranking.tie_order``)."""

    names_break_ties = True


def test_a_policy_breaking_ties_by_name_follows_the_tie_order_not_the_runs_ranks() -> None:
    nodes = (NodeSpec("c", 8000, 64, 2, "G2"), NodeSpec("a", 8000, 64, 2, "G2"), NodeSpec("b", 8000, 64, 2, "G2"))
    order = _order([pod(1000, 1, 1000)] * 5, ranks=(2, 1, 0))
    result = replay(nodes, order, _NamedTies(), original_pods=order.pods)
    # CRC-32: "c" 112844655 < "b" 1908338681 < "a" 3904355907, so c, c, b, b, a whatever the ranks say
    assert result.placements == (0, 0, 2, 2, 1)


class _Learner:
    """An online policy: prefers the node with the most free CPU until it has seen 2 pods, then the least."""

    name = "Learner"

    def __init__(self) -> None:
        self.seen = 0

    def prepare(self, context: RunContext) -> None:
        self.seen = 0

    def score(self, node: NodeState, pod: PodShape) -> int:
        return node.cpu_free if self.seen <= 2 else -node.cpu_free

    def observe(self, pod: Pod) -> bool:
        self.seen += 1
        return self.seen == 3  # the policy flips at the third pod


def test_an_observer_sees_each_pod_first_and_can_invalidate_memoised_scores() -> None:
    order = _order([pod(1000)] * 4)
    result = replay(_NODES, order, _Learner(), original_pods=order.pods)
    # most free CPU: n1 (rank 0 beats n0 on the 8000 tie), then n0 (8000 > 7000); then the least: n2 (4000)
    assert result.placements == (1, 0, 2, 2)


def _reference(nodes: Sequence[NodeSpec], order: ArrivalOrder, policy: str) -> list[int]:
    """A full scan per pod, no memo: what the engine must decide."""
    from extender.advice.replay.nodes import initial_state, place
    from extender.advice.replay.scorer import gpu_for  # the same GPU rule, so only node choice is compared

    scorer = POLICIES[policy]()
    scorer.prepare(RunContext(tuple(nodes), order.pods, order.seed))
    states = [initial_state(n) for n in nodes]
    chosen = []
    for p in order.pods:
        feasible = [(-scorer.score(s, p.shape), order.ranks[i], i) for i, s in enumerate(states) if fits(s, p.shape)]
        best = min(feasible)[2] if feasible else -1
        if best >= 0:
            states[best] = place(states[best], p.shape, gpu_for(scorer, states[best], p.shape))
        chosen.append(best)
    return chosen


def _random_case(rng: random.Random) -> tuple[tuple[NodeSpec, ...], ArrivalOrder]:
    nodes = tuple(
        NodeSpec(f"n{i}", rng.choice([8000, 16000, 32000]), 1 << 16, rng.choice([1, 2, 4, 8]), rng.choice(["G2", "T4"]))
        for i in range(12)
    )
    shapes = [
        rng.choice(
            [
                pod(2000),
                pod(4000, 1, 1000),
                pod(1000, 1, rng.choice([100, 250, 500, 700])),
                pod(2000, 2, 1000),
                pod(1000, 1, 300, "T4"),
                pod(8000, 4, 1000, "G2|T4"),
            ]
        )
        for _ in range(60)
    ]
    ranks = list(range(len(nodes)))
    rng.shuffle(ranks)
    return nodes, _order(shapes, tuple(ranks))


def test_incremental_scoring_places_every_pod_where_a_full_scan_would() -> None:
    rng = random.Random(7)
    for _ in range(6):
        nodes, order = _random_case(rng)
        workload = typical_pods(p.shape for p in order.pods)
        for policy in ("DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"):
            result = replay(nodes, order, POLICIES[policy](), original_pods=order.pods, frag_workload=workload)
            assert list(result.placements) == _reference(nodes, order, policy), policy


def test_random_picks_only_feasible_nodes_and_is_reproducible_per_seed() -> None:
    nodes, order = _random_case(random.Random(3))
    first = replay(nodes, order, POLICIES["Random"](), original_pods=order.pods)
    again = replay(nodes, order, POLICIES["Random"](), original_pods=order.pods)
    assert first.placements == again.placements
    assert len(set(first.placements) - {-1}) > 3  # spread out, unlike a score-driven policy


class _HoldsOffN1(_Constant):
    """Every node alike; a share is held off node n1 (rank 0, so the engine's first choice), and off
    every node once ``everywhere`` is set. Records what the engine tells it of the fleet."""

    hold_limit_s = 300.0

    def __init__(self) -> None:
        self.everywhere = False
        self.heard: list[tuple[str, object]] = []

    def fleet(self, states: Sequence[NodeState]) -> None:
        self.heard.append(("fleet", len(states)))

    def moved(self, node: int, state: NodeState) -> None:
        self.heard.append(("moved", node))

    def waiting(self, pod: PodShape) -> None:
        self.heard.append(("waiting", pod.gpu_milli))

    def resumed(self, pod: PodShape) -> None:
        self.heard.append(("resumed", pod.gpu_milli))

    def holds(self, node: NodeState, pod: PodShape) -> bool:
        return pod.is_sharing and (self.everywhere or node.cpu_free == 7000)


def test_a_held_pod_goes_to_the_best_node_that_does_not_hold_it_or_waits() -> None:
    nodes = (NodeSpec("n0", 8000, 64, 2, "G2"), NodeSpec("n1", 7000, 64, 2, "G2"), NodeSpec("n2", 4000, 64, 1, "T4"))
    holding = _HoldsOffN1()
    order = _order([pod(0, 1, 300), pod(0, 1, 1000)])
    result = replay(nodes, order, holding, original_pods=order.pods)
    # ranks (2, 0, 1): n1 is first, but holds the share: it goes to n2 (rank 1); the whole GPU to n1
    assert result.placements == (2, 1)
    assert holding.heard == [("fleet", 3), ("moved", 2), ("moved", 1)]
    holding.everywhere = True
    result = replay(nodes, _order([pod(0, 1, 300)]), holding, original_pods=order.pods)
    # held everywhere, it waits; nothing arrives after it, so it comes back at its limit (300 s) and
    # goes where no reserve would stop it: n1, rank 0
    assert result.placements == (1,)
    assert result.waits == (300.0,)
    assert holding.heard[-3:] == [("waiting", 300), ("moved", 1), ("resumed", 300)]
