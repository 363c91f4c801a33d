"""``gpu-advisor defrag --apply`` against an HTTP-level fake API server: each move's intent is written, then
its pod evicted, in plan order, with the kubeconfig's credentials; a PodDisruptionBudget's 429 stops it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_advisor.cli import main
from gpu_advisor.cli.exits import EXIT_BAD_INPUT, EXIT_NO_ANSWER, EXIT_STOPPED
from tests.defrag.objects import node, pod
from tests.fakes.apiserver import FakeApiServer

RS_UID = "5f0c1c2e-0000-4000-8000-00000000a001"
LEASE = "gpu-advisor/defrag-" + RS_UID
PDBS = "/apis/policy/v1/poddisruptionbudgets"


def replica(name: str, on: str) -> dict[str, Any]:
    """A replica of the Deployment ``train`` (its ReplicaSet ``train-7d4``) holding one GPU."""
    made = pod(name, 1, on)
    made["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "train-7d4", "uid": RS_UID, "controller": True}
    ]
    return made


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    """big: 4 GPUs, 2 held by ml/p and ml/q; c: 2 GPUs free. A 4-GPU pod fits after both move to c."""
    with FakeApiServer() as server:
        server.put("nodes", node("big", 4))
        server.put("nodes", node("c", 2))
        server.put("pods", replica("p", "big"))
        server.put("pods", replica("q", "big"))
        server.documents[PDBS] = {"kind": "PodDisruptionBudgetList", "apiVersion": "policy/v1", "items": []}
        yield server


def _args(fake: FakeApiServer, tmp_path: Path, *more: str) -> list[str]:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": fake.url}}],
        "users": [{"name": "operator", "user": {"token": "operator-token"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "operator"}}],
        "current-context": "fake",
    }
    (tmp_path / "kubeconfig").write_text(json.dumps(config))
    (tmp_path / "quad.json").write_text(json.dumps(pod("quad", 4)))
    base = ["defrag", "--for", str(tmp_path / "quad.json"), "--cluster", "kube"]
    return [*base, "--kubeconfig", str(tmp_path / "kubeconfig"), *more]


def _writes(fake: FakeApiServer) -> list[tuple[str, str]]:
    """Every write the fake received, as (method, what it names), in order."""
    out = []
    for method, path, _, _ in fake.requests:
        if method != "GET":
            out.append((method, path.split("/namespaces/")[-1].split("?")[0]))
    return out


def test_each_intent_is_written_before_its_pod_is_evicted_in_plan_order(
    fake: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_args(fake, tmp_path, "--apply")) == 0
    assert _writes(fake) == [
        ("POST", "gpu-advisor/leases"),  # the ReplicaSet's next pod goes to c ...
        ("POST", "ml/pods/p/eviction"),  # ... then its pod p leaves big
        ("PATCH", "gpu-advisor/leases/defrag-" + RS_UID),  # and its next one after that to c too
        ("POST", "ml/pods/q/eviction"),
    ]
    assert fake.evictions == ["ml/p", "ml/q"]
    notes = fake.objects["leases"][LEASE]["metadata"]["annotations"]
    assert notes == {"gpu-advisor.io/defrag-owner": "ReplicaSet ml/train-7d4", "gpu-advisor.io/defrag-nodes": "c,c"}
    evictions = [{k.lower(): v for k, v in h.items()} for _, p, h, _ in fake.requests if p.endswith("/eviction")]
    assert [h["authorization"] for h in evictions] == ["Bearer operator-token"] * 2  # the operator's credentials
    out = capsys.readouterr().out
    assert "evicted ml/p from big; ReplicaSet ml/train-7d4's next pod goes to c" in out
    assert out.rstrip().endswith("done: 2 pod(s) evicted; their owners' next pods go where the plan said")


def test_a_budget_refusing_the_second_eviction_stops_the_plan_and_takes_its_node_back(
    fake: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.budget_forbids.add("ml/q")
    assert main(_args(fake, tmp_path, "--apply")) == EXIT_STOPPED
    err = capsys.readouterr().err
    assert "stopped: ml/q was not evicted: a PodDisruptionBudget forbids it now (API server answered 429" in err
    assert "1 of 2 move(s) made, none after it" in err and "Traceback" not in err
    assert fake.evictions == ["ml/p"]
    # the refused move's node is taken back: only the move made sends a pod to c
    assert fake.objects["leases"][LEASE]["metadata"]["annotations"]["gpu-advisor.io/defrag-nodes"] == "c"


def test_a_budget_refusing_the_first_eviction_leaves_no_intent(
    fake: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.budget_forbids.add("ml/p")
    assert main(_args(fake, tmp_path, "--apply")) == EXIT_STOPPED
    assert "stopped: ml/p was not evicted" in capsys.readouterr().err
    assert fake.evictions == [] and LEASE not in fake.objects["leases"]
    assert _writes(fake)[-1] == ("DELETE", "gpu-advisor/leases/defrag-" + RS_UID)


def test_without_apply_nothing_is_written(fake: FakeApiServer, tmp_path: Path) -> None:
    assert main(_args(fake, tmp_path)) == 0
    assert _writes(fake) == [] and fake.evictions == []


def test_no_plan_applies_nothing(fake: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_args(fake, tmp_path, "--apply", "--budget", "1")) == EXIT_NO_ANSWER
    assert capsys.readouterr().out.startswith("no plan within 1 move(s)")
    assert _writes(fake) == []


def test_apply_is_refused_on_a_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cluster.json").write_text(json.dumps({"kind": "List", "items": [node("a", 2)]}))
    (tmp_path / "big.json").write_text(json.dumps(pod("big", 4)))
    args = ["defrag", "--for", str(tmp_path / "big.json"), "--cluster", str(tmp_path / "cluster.json"), "--apply"]
    assert main(args) == EXIT_BAD_INPUT
    assert (
        "--apply evicts on the live cluster the plan is made on: use it with --cluster kube" in capsys.readouterr().err
    )
