"""``POST /v1/defrag`` without a snapshot plans on what the advisor serves: its live model (pods and
PodDisruptionBudgets listed from the API server when asked), or the snapshot it was started on. Built as
``gpu-advisor serve`` builds it (``build_advisor``), against the fake API server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.advice.defrag.look import DefragLook
from gpu_advisor.app import create_app
from gpu_advisor.serve import build_advisor
from tests.defrag.objects import node, pod
from tests.fakes.apiserver import FakeApiServer

PDBS = "/apis/policy/v1/poddisruptionbudgets"


def replica(name: str, on: str, app: str = "train") -> dict[str, Any]:
    made = pod(name, 1, on, labels={"app": app})
    made["metadata"]["ownerReferences"] = [
        {"kind": "ReplicaSet", "name": f"{app}-1", "uid": f"rs-{app}", "controller": True}
    ]
    return made


def budget(allowed: int) -> dict[str, Any]:
    meta = {"name": "train", "namespace": "ml"}
    spec = {"selector": {"matchLabels": {"app": "train"}}}
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta,
        "spec": spec,
        "status": {"disruptionsAllowed": allowed},
    }


def kubeconfig(tmp_path: Path, url: str) -> str:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": url}}],
        "users": [{"name": "advisor", "user": {"token": "advisor-token"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "advisor"}}],
        "current-context": "fake",
    }
    (tmp_path / "kubeconfig").write_text(json.dumps(config))
    return str(tmp_path / "kubeconfig")


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[FakeApiServer, TestClient]]:
    """a and b: 2 GPUs each, one held on each by a replica of ml/train (a 2-GPU pod fits after one move)."""
    with FakeApiServer() as fake:
        fake.put("nodes", node("a", 2))
        fake.put("nodes", node("b", 2))
        fake.put("pods", replica("p", "a"))
        fake.put("pods", replica("q", "b"))
        fake.documents[PDBS] = {"kind": "PodDisruptionBudgetList", "apiVersion": "policy/v1", "items": []}
        advisor, background = build_advisor("kube", None, None, kubeconfig=kubeconfig(tmp_path, fake.url))
        background.start()
        assert advisor.state.wait_ready(8)
        with TestClient(create_app(advisor)) as app:
            yield fake, app
        background.stop()


def test_a_live_plan_lists_the_bound_pods_and_their_budgets_when_asked(live: tuple[FakeApiServer, TestClient]) -> None:
    fake, app = live
    plan = app.post("/v1/defrag", json={"pod": pod("big", 2)})
    assert plan.status_code == 200, plan.text
    assert len(plan.json()["moves"]) == 1 and plan.json()["found"]
    assert plan.json()["placed_on"] == plan.json()["moves"][0]["source"]
    assert fake.list_count["pods"] >= 2  # the watch's list, and the plan's own
    fake.documents[PDBS]["items"] = [budget(0)]  # read at the next plan, not kept
    kept = app.post("/v1/defrag", json={"pod": pod("big", 2)}).json()
    assert not kept["found"] and kept["verdict"].startswith("no plan: no pod may move")
    assert {x["why"] for x in kept["left_alone"]} == {"PodDisruptionBudget ml/train allows no disruption now"}


def test_a_live_fleet_plan_and_bad_questions(live: tuple[FakeApiServer, TestClient]) -> None:
    _, app = live
    fleet = app.post("/v1/defrag", json={"budget": 2})
    assert fleet.status_code == 200 and fleet.json()["goal"] == "fleet"
    unknown = {**pod("big", 2), "spec": {**pod("big", 2)["spec"], "nodeName": "zz"}}
    for body, said in [
        ({"pod": unknown}, "the pod's spec.nodeName 'zz' is not a node of this cluster"),
        ({"pod": pod("small", 1), "budget": 2}, "ml/small fits already on"),
        ({"budget": 0}, "at least 1 move"),
        ({"budget": -1}, "at least 1 move"),
        ({"snapshot": "nope"}, "'snapshot' must be a snapshot document"),
        ([1, 2], "a plan is asked for with {'pod'?"),
    ]:
        refused = app.post("/v1/defrag", json=body)
        assert refused.status_code == 422 and said in refused.json()["detail"], (body, refused.text)


def test_a_budget_the_api_server_will_not_list_is_a_503_not_a_plan_that_ignores_it(
    live: tuple[FakeApiServer, TestClient],
) -> None:
    fake, app = live
    del fake.documents[PDBS]  # as a role without list on poddisruptionbudgets: no answer to read
    refused = app.post("/v1/defrag", json={"pod": pod("big", 2)})
    assert refused.status_code == 503 and "cannot list PodDisruptionBudgets" in refused.json()["detail"]


def test_a_served_snapshot_is_planned_on_with_its_own_budgets(tmp_path: Path) -> None:
    items = [node("a", 2), node("b", 2), replica("p", "a"), replica("q", "b"), budget(0)]
    (tmp_path / "cluster.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    advisor, _ = build_advisor(str(tmp_path / "cluster.json"), None, None)
    with TestClient(create_app(advisor)) as app:
        kept = app.post("/v1/defrag", json={"pod": pod("big", 2)}).json()
        assert kept["verdict"].startswith("no plan: no pod may move") and kept["movable"] == 0
        assert {x["pod"] for x in kept["left_alone"]} == {"ml/p", "ml/q"}


def test_one_plan_at_a_time_per_replica(tmp_path: Path) -> None:
    items = [node("a", 2), node("b", 2), replica("p", "a"), replica("q", "b")]
    (tmp_path / "cluster.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    advisor, _ = build_advisor(str(tmp_path / "cluster.json"), None, None)
    entered, release = threading.Event(), threading.Event()
    look = advisor.defrag_look
    assert look is not None

    def slow() -> DefragLook:
        entered.set()
        release.wait(5)
        return look()

    advisor.defrag_look = slow
    with TestClient(create_app(advisor)) as app:
        first: list[int] = []
        worker = threading.Thread(target=lambda: first.append(app.post("/v1/defrag", json={}).status_code))
        worker.start()
        assert entered.wait(5)
        busy = app.post("/v1/defrag", json={})
        release.set()
        worker.join(5)
    assert busy.status_code == 429 and "another plan is being worked out" in busy.json()["detail"]
    assert first == [200]
