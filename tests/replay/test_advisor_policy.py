"""The advisor's replay policy: the extender's own judge on Kubernetes objects built from trace nodes."""

from __future__ import annotations

import pytest

from extender.advice.replay.advisor_policy import ADVISOR_POLICIES, AdvisorPolicy, rank_score
from extender.advice.replay.engine import replay
from extender.advice.replay.policies import make_policy
from extender.advice.replay.scorer import GpuChooser, Observer, RunContext, Scorer
from extender.advice.replay.specs import ArrivalOrder, NodeSpec, Pod
from extender.scoring.verdict import Verdict
from tests.replay.conftest import node, pod

# In tie order (CRC-32 of the name): g2-b 600603587, g2-a 3133483641, t4-a 4242845370.
_NODES = (
    NodeSpec("g2-a", 32000, 1 << 17, 2, "G2"),
    NodeSpec("g2-b", 32000, 1 << 17, 2, "G2"),
    NodeSpec("t4-a", 8000, 1 << 16, 1, "T4"),
)


def _context(pods: list[Pod]) -> RunContext:
    return RunContext(_NODES, tuple(pods), 1)


def test_both_variants_are_scorers_that_choose_gpus_and_learn() -> None:
    for make in ADVISOR_POLICIES.values():
        policy = make()
        assert isinstance(policy, Scorer) and isinstance(policy, GpuChooser) and isinstance(policy, Observer)
    assert [make().name for make in ADVISOR_POLICIES.values()] == ["advisor", "advisor-given"]


@pytest.mark.parametrize(
    ("lower", "higher"),
    [((50, 0.9), (51, 0.0)), ((50, 0.543), (50, 0.544)), ((0, 1.0), (1, 0.0))],
)
def test_the_integer_score_keeps_the_rank_order(lower: tuple[float, float], higher: tuple[float, float]) -> None:
    assert rank_score(Verdict("n", True, "", rank=lower)) < rank_score(Verdict("n", True, "", rank=higher))


def test_a_share_goes_where_the_extender_says_and_fills_a_used_gpu_first() -> None:
    pods = [Pod("a", pod(1000, 1, 500)), Pod("b", pod(1000, 1, 500))]
    policy = AdvisorPolicy()
    policy.prepare(_context(pods))
    assert policy.observe(pods[0])  # the first pod renews the mix
    half = node(31000, (500, 1000))
    assert policy.choose_gpu(half, pods[1].shape) == 0
    verdict = policy.verdict(half, pods[1].shape)
    assert verdict.reason.startswith("shares GPU 0: 500 of its 500 free milli, 0 stays free")
    # filling GPU 0 exactly strands less than halving an idle GPU elsewhere
    assert policy.score(half, pods[1].shape) > policy.score(node(32000, (1000, 1000)), pods[1].shape)


def test_a_node_the_replay_admits_but_the_advisor_refuses_is_a_loud_error() -> None:
    policy = AdvisorPolicy()
    policy.prepare(_context([]))
    with pytest.raises(ValueError, match="refuses a node the replay's filter admits"):
        policy.verdict(node(32000, (300, 200)), pod(1000, 1, 500))


def test_online_learns_from_arrivals_and_given_knows_the_trace_up_front() -> None:
    pods = [Pod(f"p{n}", pod(2000, 1, 300 if n % 2 else 1000)) for n in range(8)]
    online, given = AdvisorPolicy(), AdvisorPolicy(given=True)
    online.prepare(_context(pods))
    given.prepare(_context(pods))
    assert not given.observe(pods[0])
    assert [online.observe(p) for p in pods[:4]] == [True, True, False, True]


def test_a_small_replay_places_every_pod_the_cluster_can_hold() -> None:
    shapes = [pod(4000, 1, 500), pod(4000, 1, 500), pod(4000, 2, 1000), pod(2000, 1, 700, "T4"), pod(4000, 1, 300)]
    order = ArrivalOrder(1, tuple(Pod(f"p{i}", s) for i, s in enumerate(shapes)), (0, 1, 2))
    result = replay(_NODES, order, AdvisorPolicy(), original_pods=order.pods)
    # the two halves share one G2 GPU (g2-b: the two G2s tie for the first, g2-b first in tie order), the pair
    # takes the other G2 whole, the typed pod its T4, the 300 the G2 left
    assert result.placements[:4] == (1, 1, 0, 2) and result.dropped == 0


def test_a_memory_hungry_pod_takes_the_node_whose_memory_was_short_already() -> None:
    # The mix: whole-GPU pods asking 32 GiB. Two nodes alike in CPU and GPUs (two idle each): the 64 GiB one
    # holds two such pods, so both its GPUs are usable (F = 0); the 40 GiB one holds one, so one GPU is
    # stranded already (F = 1000). A pod asking 40 GiB leaves 24 GiB on the first, where no 32 GiB pod fits:
    # its other GPU is stranded (F 0 -> 1000, level 26); on the second it leaves nothing beside the GPU that
    # was stranded anyway (F 1000 -> 1000, level 50). FGD, blind to memory, calls them equal.
    small, big = pod(4000, 1, 1000, mem=32768), pod(4000, 1, 1000, mem=40960)
    policy = AdvisorPolicy()
    policy.prepare(_context([Pod("a", small)]))
    policy.observe(Pod("a", small))
    roomy, tight = node(32000, (1000, 1000), mem=65536), node(32000, (1000, 1000), mem=40960)
    assert policy.verdict(roomy, big).rank[0] == 26 and policy.verdict(tight, big).rank[0] == 50
    assert policy.score(tight, big) > policy.score(roomy, big)
    # a replay given the whole trace's mix (nine 32 GiB pods and the 40 GiB one: p 0.9 and 0.1): on the
    # roomy node F = 0.1 × 1000 -> 1000 (level 28), on the tight one 1000 -> 1000 (level 50): the pod goes
    # to the tight one, where FGD's tie-break (the roomy one first) sends it to the roomy one
    trace = (*(Pod(f"s{n}", small) for n in range(9)), Pod("b", big))
    order = ArrivalOrder(1, (Pod("b", big),), (0, 1))
    nodes = (NodeSpec("roomy", 32000, 65536, 2, "G2"), NodeSpec("tight", 32000, 40960, 2, "G2"))
    assert replay(nodes, order, AdvisorPolicy(given=True), original_pods=trace).placements == (1,)
    assert replay(nodes, order, make_policy("FGD"), original_pods=trace).placements == (0,)
