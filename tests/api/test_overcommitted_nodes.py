"""An over-committed node is visible wherever a person or an alert looks: the Prometheus gauge, /v1/nodes,
the console's node card and diagnose. The real-cluster case: kube-scheduler counts no sharing annotation,
so two 600-milli Alibaba shares land on one GPU of a node the advisor was not asked about."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from extender.advice.diagnose import diagnose
from extender.advice.replay.advisor_policy import replay_node_object
from extender.cluster.state import ClusterState, node_state
from extender.http.advisor import Advisor
from extender.scoring import ScoringPolicy
from gpu_advisor.app import create_app
from tests.api.test_shared_gpus import alibaba_pod, bound

OVER = "GPU 0: 1200 milli bound of 1000"  # 600 + 600 milli recorded on GPU 0


@pytest.fixture
def cluster() -> ClusterState:
    """g2-over: 600 + 600 milli bound on its GPU 0; g2-ok: 600 + 400 on GPU 0 (full, not over)."""
    state = ClusterState("shared")
    over = [bound(alibaba_pod("a", 600, gpu=0), "g2-over"), bound(alibaba_pod("b", 600, gpu=0), "g2-over")]
    full = [bound(alibaba_pod("c", 600, gpu=0), "g2-ok"), bound(alibaba_pod("d", 400, gpu=0), "g2-ok")]
    state.replace_all(
        [
            node_state(replay_node_object("g2-over", "G2", 96_000, 786_432, 2), over, state.machines),
            node_state(replay_node_object("g2-ok", "G2", 96_000, 786_432, 2), full, state.machines),
        ]
    )
    return state


@pytest.fixture
def advisor(cluster: ClusterState) -> Advisor:
    return Advisor(cluster, None, ScoringPolicy(), clock=lambda: 0.0)


@pytest.fixture
def client(advisor: Advisor) -> Iterator[TestClient]:
    with TestClient(create_app(advisor)) as c:
        yield c


def test_the_gauge_counts_the_over_committed_nodes(client: TestClient, advisor: Advisor) -> None:
    assert client.get("/metrics").status_code == 200
    assert advisor.registry.get_sample_value("gpu_advisor_overcommitted_nodes") == 1.0  # g2-over, not g2-ok


def test_v1_nodes_says_what_each_node_holds_more_of_than_it_has(client: TestClient) -> None:
    nodes = {n["name"]: n for n in client.get("/v1/nodes").json()}
    assert nodes["g2-over"]["overcommitted"] == [OVER]
    assert nodes["g2-ok"]["overcommitted"] == []
    assert client.get("/v1/nodes/g2-over").json()["overcommitted"] == [OVER]


def test_the_console_node_card_carries_the_flag(client: TestClient) -> None:
    assert client.get("/v1/console/nodes/g2-over").json()["overcommitted"] == [OVER]
    cards = {c["name"]: c for c in client.get("/v1/console/cluster").json()["nodes"]}
    assert cards["g2-ok"]["overcommitted"] == []


def test_diagnose_answers_a_pod_on_an_over_committed_node_with_the_over_commitment(cluster: ClusterState) -> None:
    pod = alibaba_pod("a", 600, gpu=0)
    pod["spec"]["nodeName"] = "g2-over"
    found = diagnose(pod, cluster.nodes_by_name(), None, ScoringPolicy(), 0.0)
    assert found.answer is not None and found.answer.name == "allocation"
    assert "g2-over, which is over-committed" in found.answer.finding
    assert found.answer.evidence == (f"g2-over: {OVER}",)


def test_diagnose_of_a_pending_pod_names_the_over_committed_nodes(cluster: ClusterState) -> None:
    found = diagnose(alibaba_pod("new", 300), cluster.nodes_by_name(), None, ScoringPolicy(), 0.0)
    evidence = [line for step in found.steps for line in step.evidence]
    assert f"g2-over: over-committed ({OVER})" in evidence
