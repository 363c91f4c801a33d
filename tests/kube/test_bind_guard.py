"""The bind verb binds only what kube-scheduler would bind: a pod of a profile that consults the advisor,
onto a node its own constraints allow, that a filter or prioritize answer of this replica passed. Every
other binding is refused with the reason, nothing is written, and the refusal is counted by reason.

Against an HTTP-level fake API server, with the real kubernetes client, the real app and the real watch
(the same replica as ``test_never_overcommitted``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.advice.replay.advisor_policy import replay_node_object
from gpu_advisor.app import create_app
from tests.fakes.apiserver import FakeApiServer
from tests.kube.test_never_overcommitted import bind, passed, replica, share, top


def labelled(name: str, labels: dict[str, str], taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    node = replay_node_object(name, "T4", 64_000, 262_144, 1)
    node["metadata"]["labels"] = {**node["metadata"].get("labels", {}), **labels}
    if taints:
        node.setdefault("spec", {})["taints"] = taints
    return node


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    """pool-a (labelled pool=a), pool-b (pool=b), tainted (dedicated=x:NoSchedule), cordoned."""
    with FakeApiServer() as server:
        server.put("nodes", labelled("pool-a", {"pool": "a"}))
        server.put("nodes", labelled("pool-b", {"pool": "b"}))
        server.put("nodes", labelled("tainted", {}, [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]))
        cordoned = labelled("cordoned", {})
        cordoned["spec"] = {"unschedulable": True}
        server.put("nodes", cordoned)
        yield server


def pending(fake: FakeApiServer, name: str, **spec: Any) -> dict[str, Any]:
    pod = share(name)
    pod["spec"].update(spec)
    fake.put("pods", pod)
    return pod


def refusals(app: TestClient) -> dict[str, float]:
    text = app.get("/metrics").text
    prefix = "gpu_advisor_bind_refusals_total{reason="
    return {line.split('"')[1]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix)}


@pytest.mark.parametrize(
    ("spec", "node", "filtered", "says", "reason"),
    [
        # A pod of default-scheduler: the advisor's profile never schedules it.
        ({"schedulerName": "default-scheduler"}, "pool-a", False, "scheduler default-scheduler", "scheduler"),
        ({"schedulerName": "default-scheduler"}, "pool-a", True, "scheduler default-scheduler", "scheduler"),
        # nodeSelector pool=b onto a node labelled pool=a.
        ({"nodeSelector": {"pool": "b"}}, "pool-a", False, "nodeSelector pool=b does not match", "constraints"),
        ({"nodeSelector": {"pool": "b"}}, "pool-a", True, "nodeSelector pool=b does not match", "constraints"),
        # A NoSchedule taint the pod does not tolerate.
        ({}, "tainted", False, "taint dedicated=x:NoSchedule not tolerated", "constraints"),
        # Required node affinity: In pool [b].
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["b"]}]}
                            ]
                        }
                    }
                }
            },
            "pool-a",
            False,
            "required node affinity does not match",
            "constraints",
        ),
        ({}, "cordoned", False, "node is cordoned", "constraints"),
        ({"nodeName": "pool-b"}, "pool-a", False, "names node pool-b", "constraints"),
        # Everything allowed, but the advisor was never asked about it: no filter, no prioritize.
        ({}, "pool-a", False, "no filter or prioritize answer", "not-approved"),
        # Filtered onto pool-b only: pool-a was never passed.
        ({}, "pool-a", True, "no filter or prioritize answer", "not-approved"),
    ],
)
def test_a_binding_kube_scheduler_would_not_make_is_refused_and_nothing_is_written(
    fake: FakeApiServer, spec: dict[str, Any], node: str, filtered: bool, says: str, reason: str
) -> None:
    pod = pending(fake, "p", **spec)
    advisor, source = replica(fake)
    with TestClient(create_app(advisor)) as app:
        if filtered:  # a filter call that passes pool-b alone (the attacker's own, or kube-scheduler's)
            passed(app, pod, ["pool-b"])
        why = bind(app, pod, node)
        counted = refusals(app)
    assert why.startswith("refused to bind openb/p: ") and says in why, why
    assert counted == {reason: 1.0}
    assert fake.bindings == []
    assert fake.objects["pods"]["openb/p"]["spec"].get("nodeName") == spec.get("nodeName")  # left Pending
    source.stop()


@pytest.mark.parametrize("passes", ["best", "fitting"])
def test_after_kube_schedulers_own_filter_and_prioritize_the_binding_succeeds(fake: FakeApiServer, passes: str) -> None:
    """The best node alone passed: kube-scheduler binds it without scoring. Every fitting node passed
    (``--filter-passes fitting``): it binds prioritize's top."""
    pod = pending(fake, "p", tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}])
    advisor, source = replica(fake)
    advisor.filter_passes = passes
    with TestClient(create_app(advisor)) as app:
        names = passed(app, pod, ["pool-a", "pool-b", "tainted"])
        if passes == "best":
            assert len(names) == 1
            chosen = names[0]
        else:
            assert names == ["pool-a", "pool-b", "tainted"]
            chosen = top(app, pod, names)
        assert bind(app, pod, chosen) == ""
        assert refusals(app) == {}
    assert fake.bindings == [("openb/p", chosen)]
    source.stop()


def test_a_node_the_filter_passed_but_prioritize_did_not_rank_first_may_still_be_bound(fake: FakeApiServer) -> None:
    """A profile whose own score plugins outweigh the extender (a lower weight, served with
    ``--filter-passes fitting``) binds another passed node."""
    pod = pending(fake, "p")
    advisor, source = replica(fake)
    advisor.filter_passes = "fitting"
    with TestClient(create_app(advisor)) as app:
        names = passed(app, pod, ["pool-a", "pool-b"])
        chosen = top(app, pod, names)
        other = next(n for n in names if n != chosen)
        assert bind(app, pod, other) == ""
    source.stop()


@pytest.mark.parametrize(
    ("body", "says", "reason"),
    [
        (
            {"PodName": "absent", "PodNamespace": "openb", "PodUID": "uid-absent", "Node": "pool-a"},
            "does not exist",
            "pod-unknown",
        ),
        (
            {"PodName": "p", "PodNamespace": "openb", "PodUID": "uid-other", "Node": "pool-a"},
            "is another pod now",
            "pod-unknown",
        ),
        (
            {"PodName": "p", "PodNamespace": "openb", "PodUID": "uid-p", "Node": "no-such-node"},
            "node no-such-node does not exist",
            "node-unknown",
        ),
    ],
)
def test_bad_bind_bodies_are_an_error_with_the_reason(
    fake: FakeApiServer, body: dict[str, str], says: str, reason: str
) -> None:
    pending(fake, "p")
    advisor, source = replica(fake)
    with TestClient(create_app(advisor)) as app:
        reply = app.post("/scheduler/bind", json=body)
        counted = refusals(app)
    assert reply.status_code == 200 and says in reply.json()["Error"], reply.text
    assert counted == {reason: 1.0}
    assert fake.bindings == []
    source.stop()


def test_a_scheduler_named_in_the_served_configuration_is_one_that_consults_the_advisor(fake: FakeApiServer) -> None:
    pod = pending(fake, "p", schedulerName="gpu-training")
    advisor, source = replica(fake)
    advisor.bind_schedulers = frozenset({"gpu-advisor", "gpu-training"})
    with TestClient(create_app(advisor)) as app:
        passed(app, pod, ["pool-a"])
        assert bind(app, pod, "pool-a") == ""
    source.stop()
