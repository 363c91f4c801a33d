"""The served advisor sends the next pod of an evicted pod's owner where the applied plan said: it reads the
plan's intent through its Lease watch and ranks the planned node first while it fits, until the intent
expires or a new pod of that owner is bound there. The real watch and client, the fake API server."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.cluster.defrag_intents import Owner, intent_lease
from extender.cluster.node import parse_time
from extender.model.pods import pod_request
from gpu_advisor.app import create_app
from tests.containment.live import eventually
from tests.defrag.objects import node, pod
from tests.fakes.apiserver import FakeApiServer
from tests.kube.test_never_overcommitted import replica, top

TRAIN = Owner("ReplicaSet", "ml", "train-7d4", "5f0c1c2e-0000-4000-8000-00000000a001")
NAMES = ["a", "b", "c"]
CREATED = "2026-12-02T10:00:00Z"  # the fake API server stamps every Lease it creates with this time
START = parse_time(CREATED) or 0.0


def owned(name: str, owner: Owner | None, on: str | None = None, created: str | None = None) -> dict[str, Any]:
    made = pod(name, 1, on)
    made["metadata"]["uid"] = f"uid-{name}"
    made["metadata"]["ownerReferences"] = (
        [{"kind": owner.kind, "name": owner.name, "uid": owner.uid, "controller": True}] if owner else []
    )
    made["spec"]["schedulerName"] = "gpu-advisor"
    if created:
        made["metadata"]["creationTimestamp"] = created
    return made


@pytest.fixture
def served() -> Iterator[tuple[FakeApiServer, Any, TestClient]]:
    """Three idle nodes of 2 GPUs; an advisor replica wired as serve wires it, its clock a minute into the intent."""
    with FakeApiServer() as fake:
        for name in NAMES:
            fake.put("nodes", node(name, 2))
        advisor, source = replica(fake)
        advisor.planned = source.model.intents.sender(source.pod_index.owned_since, lambda: advisor.clock())
        advisor.clock = lambda: START + 60
        with TestClient(create_app(advisor)) as app:
            yield fake, advisor, app
        source.stop()


def _planned_elsewhere(fake: FakeApiServer, app: TestClient, nodes_for: int = 1) -> str:
    """The intent for TRAIN names a node the advisor would not choose by itself; that node."""
    chosen = top(app, owned("probe", None), NAMES)
    planned = next(n for n in NAMES if n != chosen)
    fake.create("leases", "gpu-advisor", intent_lease("gpu-advisor", TRAIN, [planned] * nodes_for, ttl_s=600))
    return planned


def test_the_owners_next_pod_goes_to_the_planned_node_and_another_owners_does_not(
    served: tuple[FakeApiServer, Any, TestClient],
) -> None:
    fake, _, app = served
    chosen = top(app, owned("probe", None), NAMES)
    planned = _planned_elsewhere(fake, app)
    eventually(lambda: top(app, owned("train-new", TRAIN), NAMES) == planned)
    scores = {e["Host"]: e["Score"] for e in app.post("/scheduler/prioritize", json=_args("train-new")).json()}
    assert scores[planned] > max(s for n, s in scores.items() if n != planned)  # alone on top
    other = Owner("ReplicaSet", "ml", "serve-1", "5f0c1c2e-0000-4000-8000-00000000b002")
    assert top(app, owned("serve-new", other), NAMES) == chosen


def test_a_reply_kept_for_the_pods_shape_is_never_reused_for_a_pod_a_plan_sends(
    served: tuple[FakeApiServer, Any, TestClient],
) -> None:
    fake, advisor, app = served
    planned = _planned_elsewhere(fake, app)
    train, probe = owned("train-new", TRAIN), owned("probe", None)
    eventually(lambda: advisor.planned(train) == [planned])
    top(app, probe, NAMES)  # the shape's verdicts remembered, its reply kept under their version
    assert advisor.verdicts_version(pod_request(probe), probe) is not None
    assert advisor.verdicts_version(pod_request(train), train) is None


def test_no_preference_once_the_intent_has_expired(served: tuple[FakeApiServer, Any, TestClient]) -> None:
    fake, advisor, app = served
    chosen = top(app, owned("probe", None), NAMES)
    planned = _planned_elsewhere(fake, app)
    eventually(lambda: top(app, owned("train-new", TRAIN), NAMES) == planned)
    advisor.clock = lambda: START + 600  # created + leaseDurationSeconds
    assert top(app, owned("train-new", TRAIN), NAMES) == chosen


def test_a_planned_node_is_used_once_by_a_pod_created_since_the_intent(
    served: tuple[FakeApiServer, Any, TestClient],
) -> None:
    fake, advisor, app = served
    planned = _planned_elsewhere(fake, app)
    new = owned("train-new", TRAIN)
    eventually(lambda: advisor.planned(new) == [planned])
    fake.put("pods", owned("train-old", TRAIN, on=planned, created="2026-12-02T09:00:00Z"))  # before: not its
    fake.put("pods", owned("unrelated", None, on="a", created=CREATED))
    eventually(lambda: len(fake.objects["pods"]) == 2 and advisor.state.node("a").pods != ())
    assert advisor.planned(new) == [planned]
    fake.put("pods", owned("train-replacement", TRAIN, on=planned, created=CREATED))
    eventually(lambda: advisor.planned(new) == [])


def test_a_planned_node_that_no_longer_fits_is_passed_over(served: tuple[FakeApiServer, Any, TestClient]) -> None:
    fake, advisor, app = served
    chosen = top(app, owned("probe", None), NAMES)
    planned = _planned_elsewhere(fake, app)
    full = owned("filler", None, on=planned)
    full["spec"]["containers"][0]["resources"] = copy.deepcopy(pod("x", 2)["spec"]["containers"][0]["resources"])
    fake.put("pods", full)  # both GPUs of the planned node taken
    eventually(lambda: top(app, owned("train-new", TRAIN), NAMES) == chosen)
    assert app.post("/scheduler/filter", json=_args("train-new")).json()["NodeNames"] == [chosen]
    advisor.filter_passes = "fitting"  # every node's verdict on the wire
    reply = app.post("/scheduler/filter", json=_args("train-new")).json()
    assert planned in reply["FailedNodes"]  # the filter still refuses it: a preference never places past a refusal


def _args(name: str) -> dict[str, Any]:
    return {"Pod": owned(name, TRAIN), "NodeNames": NAMES}


def test_the_default_filter_passes_the_planned_node_alone_for_the_owners_next_pod(
    served: tuple[FakeApiServer, Any, TestClient],
) -> None:
    """kube-scheduler binds the one node the default filter passes (``best_node``): for the owner's next
    pod that is the planned node; another owner's pod still gets the advisor's own best."""
    fake, _, app = served
    chosen = top(app, owned("probe", None), NAMES)
    planned = _planned_elsewhere(fake, app)

    def passed(pod_name: str, owner: Owner) -> list[str]:
        body = {"Pod": owned(pod_name, owner), "NodeNames": NAMES}
        names: list[str] = app.post("/scheduler/filter", json=body).json()["NodeNames"]
        return names

    eventually(lambda: passed("train-new", TRAIN) == [planned])
    other = Owner("ReplicaSet", "ml", "serve-1", "5f0c1c2e-0000-4000-8000-00000000b002")
    assert passed("serve-new", other) == [chosen]
