"""Without managedResources every pod of the cluster reaches the filter: one that wants no GPU passes
every node, and the same candidates get the reply of last time without judging again."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from extender.http.advisor import Advisor
from extender.http.verbs import SchedulerVerbs
from extender.scoring import ScoringPolicy, Verdict
from extender.sources.snapshot import simulated_cluster
from tests.dra.objects import load

NOW = 1_796_000_000.0


def test_a_pod_asking_no_gpu_passes_every_node_and_is_judged_once(monkeypatch: pytest.MonkeyPatch) -> None:
    snap = simulated_cluster(now=NOW)
    advisor = Advisor(state=snap.cluster("simulated"), telemetry=None, policy=ScoringPolicy(), clock=lambda: NOW)
    verbs = SchedulerVerbs(advisor)
    names = sorted(advisor.state.nodes_by_name())
    body = json.dumps(
        {"Pod": {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c"}]}}, "NodeNames": names}
    )

    status, reply = asyncio.run(verbs.filter(body.encode()))
    assert status == 200 and json.loads(reply)["NodeNames"] == names

    def judge_again(*_: Any) -> list[Verdict]:
        raise AssertionError("a pod that wants no GPU was judged again")

    monkeypatch.setattr(advisor, "judge", judge_again)
    assert asyncio.run(verbs.filter(body.encode())) == (200, reply)


def test_the_captured_dra_pod_passes_unjudged_where_its_claim_is_unknown() -> None:
    # A live model that does not follow ResourceClaims: the pod counts no GPU, so it is not held back.
    snap = simulated_cluster(now=NOW)
    advisor = Advisor(state=snap.cluster("simulated"), telemetry=None, policy=ScoringPolicy(), clock=lambda: NOW)
    status, reply = asyncio.run(
        SchedulerVerbs(advisor).filter(json.dumps(load("extender-filter-dra-pod.json")).encode())
    )
    assert status == 200
    assert json.loads(reply) == {
        "Nodes": None,
        "NodeNames": ["dra-node-2", "dra-node-1"],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": "",
    }
