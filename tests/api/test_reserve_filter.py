"""The reserve on the wire: filter holds a share off the node where it would take an idle GPU a
whole-GPU pod is likely to need, passes the node where it fits beside others, and counts the hold."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from extender.advice.replay.advisor_policy import replay_node_object, replay_pod_object
from extender.advice.replay.specs import PodShape
from extender.cluster.state import ClusterState, node_state
from extender.http.advisor import Advisor
from extender.model.pods import pod_request
from extender.scoring import ScoringPolicy
from extender.scoring.reserve import demand
from extender.scoring.reserve_ledger import WAIT_S
from gpu_advisor.app import create_app
from tests.api.test_shared_gpus import alibaba_pod, bound


def _cluster() -> ClusterState:
    """idle: 2 idle G2 GPUs, 64 cores, 256 GiB; half: GPU 0 at 500 free, GPU 1 taken whole; full: 10
    GPUs taken whole. 11,500 of 14,000 milli allocated: past the reserve's 80 %."""
    state = ClusterState("reserve")
    half = [bound(alibaba_pod("s", 500, gpu=0), "half"), bound(alibaba_pod("w", 1000, gpu=1), "half")]
    full = [bound(alibaba_pod(f"f{g}", 1000, gpu=g), "full") for g in range(10)]
    state.replace_all(
        [
            node_state(replay_node_object("idle", "G2", 64_000, 262_144, 2), (), state.machines),
            node_state(replay_node_object("half", "G2", 64_000, 262_144, 2), half, state.machines),
            node_state(replay_node_object("full", "G2", 640_000, 2_621_440, 10), full, state.machines),
        ]
    )
    return state


def _advisor(policy: ScoringPolicy) -> Advisor:
    """The mix at 16 pods: the 12 running ones (a 500 share, 11 whole GPUs, 2 cores and 4 GiB each) and
    4 of the 14 whole-GPU pods learned here (8 cores, 32 GiB): w = 15,000 / 15,500 = 0.968, the median
    whole pod 2 cores and 4 GiB (idle holds min(2, 32, 64) = 2), shares of 500 1/16 of the GPU pods."""
    advisor = Advisor(_cluster(), None, policy, clock=lambda: 0.0)
    advisor.filter_passes = "fitting"  # every node's verdict on the wire, the held one's reason included
    whole = pod_request(replay_pod_object(PodShape(8000, 32768, 1, 1000)))
    for i in range(14):
        advisor.learn(whole, f"ml/whole-{i}")
    return advisor


def _filter(client: TestClient, names: list[str]) -> dict[str, Any]:
    reply = client.post("/scheduler/filter", json={"Pod": alibaba_pod("p", 400), "NodeNames": names})
    assert reply.status_code == 200
    found: dict[str, Any] = reply.json()
    return found


def test_a_share_is_held_off_the_idle_gpu_and_passes_beside_another_share() -> None:
    # free 2,000 + 500 milli: W = 0.968 × 2.5 = 2.42 whole GPUs to come for room 2 (idle) + 0 (half);
    # P = Φ(0.42 / (½ √2.42)) = Φ(0.54) = 0.705, worth more than 400 + 600 × 1/16 = 437.5
    advisor = _advisor(ScoringPolicy(reserve_whole_gpus=True))
    with TestClient(create_app(advisor)) as client:
        reply = _filter(client, ["idle", "half"])
    assert reply["NodeNames"] == ["half"]  # GPU 0 there has 500 free: no idle GPU taken
    assert reply["FailedNodes"] == {
        "idle": "held for whole-GPU pods: this 400-milli share would take room that the whole-GPU pods "
        "still to come are likely to need; it waits until they have come or room is back"
    }
    assert reply["FailedAndUnresolvableNodes"] == {}  # it waits: the hold is not forever
    assert advisor.registry.get_sample_value("gpu_advisor_reserve_holds_total") == 1


def test_with_the_reserve_turned_off_the_share_goes_wherever_it_fits() -> None:
    advisor = _advisor(ScoringPolicy(reserve_whole_gpus=False))
    with TestClient(create_app(advisor)) as client:
        assert _filter(client, ["idle", "half"])["NodeNames"] == ["idle", "half"]
    assert advisor.registry.get_sample_value("gpu_advisor_reserve_holds_total") == 0


def test_a_held_reply_is_not_reused_once_the_room_came_back() -> None:
    advisor = _advisor(ScoringPolicy(reserve_whole_gpus=True))
    with TestClient(create_app(advisor)) as client:
        assert _filter(client, ["idle"])["NodeNames"] == []
        # five idle 8-GPU nodes join: 11,500 of 54,000 milli allocated, far from full: nothing is held
        state = advisor.state
        for i in range(5):
            state.put(node_state(replay_node_object(f"big-{i}", "G2", 512_000, 2_097_152, 8), (), state.machines))
        assert _filter(client, ["idle"])["NodeNames"] == ["idle"]


def test_a_held_pod_answered_from_the_remembered_reply_still_waits() -> None:
    now = [0.0]
    advisor = _advisor(ScoringPolicy(reserve_whole_gpus=True))
    advisor.clock = lambda: now[0]
    wants = demand(advisor.learner.current)
    assert wants is not None
    with TestClient(create_app(advisor)) as client:
        assert _filter(client, ["idle"])["NodeNames"] == []  # held: the 400 waits
        now[0] = WAIT_S - 1
        assert _filter(client, ["idle"])["NodeNames"] == []  # the same reply, given again
        now[0] = WAIT_S + 10  # past the first call's wait, not the second's
        assert advisor.reserve.fleet(wants, now[0]).waiting_milli == 400
        assert _filter(client, ["half"])["NodeNames"] == ["half"]  # a node passes it: it waits no more
        assert advisor.reserve.fleet(wants, now[0]).waiting_milli == 0
