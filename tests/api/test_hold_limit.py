"""A hold is bounded: past ``reserve_hold_limit_s``, counted from the pod's own status (when kube-scheduler
first found no node for it), the pod is judged as if no reserve existed, by any replica, after any
restart, and however the reply was remembered. Every held call is counted; the gauge says how many
pods are held now."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.http.advisor import Advisor
from extender.scoring import PolicyError, ScoringPolicy
from extender.scoring.hold_clock import held_since, until_text
from extender.sources.policy_file import load_policy
from gpu_advisor.app import create_app
from tests.api.test_reserve_filter import _advisor
from tests.api.test_shared_gpus import alibaba_pod

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def waiting_pod(name: str, since: float | None) -> dict[str, Any]:
    """A 400-milli share; ``since``: when kube-scheduler first found no node for it (None: never yet),
    as it writes it: PodScheduled False, reason Unschedulable, lastTransitionTime."""
    pod = alibaba_pod(name, 400)
    if since is not None:
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/2 nodes are available: 1 held for whole-GPU pods.",
            "lastProbeTime": None,
            "lastTransitionTime": until_text(since),
        }
        pod["status"] = {"phase": "Pending", "conditions": [condition]}
    return pod


def _held_advisor(now: list[float], limit: float = 300.0) -> Advisor:
    advisor = _advisor(ScoringPolicy(reserve_whole_gpus=True, reserve_hold_limit_s=limit))  # the reserve is opt-in
    advisor.clock = lambda: now[0]
    return advisor


def _filter(client: TestClient, pod: dict[str, Any], names: list[str] | None = None) -> list[str]:
    reply = client.post("/scheduler/filter", json={"Pod": pod, "NodeNames": names or ["idle"]})
    assert reply.status_code == 200
    passed: list[str] = reply.json()["NodeNames"]
    return passed


def _metric(advisor: Advisor, name: str) -> float | None:
    return advisor.registry.get_sample_value(name)


def test_the_clock_is_the_pods_own_status() -> None:
    assert held_since(waiting_pod("p", T0)) == T0
    assert held_since(waiting_pod("p", None)) is None
    scheduled = {"status": {"conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "x"}]}}
    assert held_since(scheduled) is None
    failed = waiting_pod("p", T0)
    failed["status"]["conditions"][0]["reason"] = "SchedulerError"  # the last attempt failed outright
    assert held_since(failed) == T0  # kept since the first: the status stayed False
    garbled = waiting_pod("p", T0)
    garbled["status"]["conditions"][0]["lastTransitionTime"] = "yesterday"
    assert held_since(garbled) is None  # unreadable: held from now, never released early by a bad field


def test_a_pod_is_held_until_its_limit_and_placed_past_it_though_its_held_reply_is_remembered() -> None:
    now = [T0]
    advisor = _held_advisor(now)
    pod = waiting_pod("p", T0)
    with TestClient(create_app(advisor)) as client:
        assert _filter(client, waiting_pod("p", None)) == []  # its first attempt: held from now
        assert _filter(client, pod) == []
        now[0] = T0 + 299
        assert _filter(client, pod) == []  # the remembered held reply, given again within the limit
        now[0] = T0 + 300
        assert _filter(client, pod) == ["idle"]  # past it: judged as if no reserve existed
        scores = client.post("/scheduler/prioritize", json={"Pod": pod, "NodeNames": ["idle"]}).json()
        assert scores[0]["Score"] > 0  # prioritize agrees: a held node would score 0
        # another pod of the same shape, first held just now, is still held: the limit is per pod
        assert _filter(client, waiting_pod("q", T0 + 290)) == []


def test_a_restarted_or_other_replica_reads_the_same_limit_from_the_pod() -> None:
    now = [T0 + 301]
    for advisor in (_held_advisor(now), _held_advisor(now)):  # two processes that never saw the pod
        with TestClient(create_app(advisor)) as client:
            assert _filter(client, waiting_pod("p", T0)) == ["idle"]
            assert _filter(client, waiting_pod("q", T0 + 2)) == []


def test_the_limit_is_the_operators() -> None:
    now = [T0 + 31]
    with TestClient(create_app(_held_advisor(now, limit=30))) as client:
        assert _filter(client, waiting_pod("p", T0)) == ["idle"]
        assert _filter(client, waiting_pod("q", T0 + 2)) == []


def test_every_held_call_is_counted_and_the_gauge_says_how_many_pods_are_held_now() -> None:
    now = [T0]
    advisor = _held_advisor(now)
    with TestClient(create_app(advisor)) as client:
        for i in range(7):  # the first judged, the six others given from memory
            now[0] = T0 + i
            assert _filter(client, waiting_pod("p", T0)) == []
        assert _metric(advisor, "gpu_advisor_reserve_holds_total") == 7
        assert _metric(advisor, "gpu_advisor_reserve_pods_held") == 1
        assert _filter(client, waiting_pod("q", T0 + 5)) == []
        assert _metric(advisor, "gpu_advisor_reserve_pods_held") == 2
        assert "half" in _filter(client, waiting_pod("q", T0 + 5), ["idle", "half"])  # q is placed
        assert _metric(advisor, "gpu_advisor_reserve_pods_held") == 1
        now[0] = T0 + 300  # p's limit has passed: it is held no more, though not heard of since
        assert _metric(advisor, "gpu_advisor_reserve_pods_held") == 0
        assert _metric(advisor, "gpu_advisor_reserve_holds_total") == 8
        text = client.get("/metrics").text
    assert "gpu_advisor_reserve_pods_held 0.0" in text


@pytest.mark.parametrize("value", [0, -5, "soon"])
def test_a_bad_limit_is_refused_at_start_up(tmp_path: Path, value: Any) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"reserve_hold_limit_s: {value}\n")
    with pytest.raises(PolicyError, match="reserve_hold_limit_s"):
        load_policy(policy)
    done = subprocess.run(
        [sys.executable, "-m", "gpu_advisor.cli", "serve", "--port", "0", "--policy", str(policy)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert "reserve_hold_limit_s" in done.stderr and "Traceback" not in done.stderr


def test_the_default_limit_is_five_minutes() -> None:
    assert ScoringPolicy().reserve_hold_limit_s == 300.0
