"""Never over-committed: what the advisor approves counts as taken until the API server shows where the pod
went, and its bind verb re-checks the room under the resourceVersion of the node's claims Lease, so two
replicas answering in turn cannot both hand out one GPU's milli. Against an HTTP-level fake API server, with
the real kubernetes client, the real app and the real watch.

The nodes share GPUs in the Alibaba convention (``alibabacloud.com/gpu-count`` GPUs of 1000 milli); the pods
ask 600 milli of one GPU, so two of them never fit one GPU: 600 + 600 = 1200 > 1000.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kubernetes import client

from extender.advice.replay.advisor_policy import replay_node_object, replay_pod_object
from extender.advice.replay.specs import PodShape
from extender.cluster.claims import ANNOTATION_CLAIMS, CLAIM_TTL_S, read_claims
from extender.cluster.shares import ALIBABA_INDEX
from extender.cluster.state import ClusterState
from extender.http.advisor import Advisor
from extender.http.approvals import Approvals, refusal
from extender.http.verbs import NOT_SYNCED
from extender.scoring import ScoringPolicy
from extender.sources.kube_binder import KubeBinder
from extender.sources.kube_watch import KubeSource
from gpu_advisor.app import create_app
from tests.conftest import SHARED_FIXTURES
from tests.containment.live import eventually
from tests.fakes.apiserver import FakeApiServer

SHARE = PodShape(2000, 4096, 1, 600)  # 2 cores, 4 GiB, 600 milli of one GPU


def share(name: str) -> dict[str, Any]:
    pod = replay_pod_object(SHARE, name)
    pod["metadata"]["uid"] = f"uid-{name}"
    pod["spec"]["schedulerName"] = "gpu-advisor"
    return pod


def replica(fake: FakeApiServer, watch: bool = True) -> tuple[Advisor, KubeSource]:
    """One advisor replica as ``serve --cluster kube`` wires it: watch, assumptions, bind verb."""
    cfg = client.Configuration()
    cfg.host = fake.url
    api = client.CoreV1Api(client.ApiClient(cfg))
    source = KubeSource(api, ClusterState("kube"), watch_timeout_s=2, backoff_s=0.05)
    if watch:
        source.start()
        assert source.state.wait_ready(8)
    advisor = Advisor(source.state, None, ScoringPolicy())
    advisor.approvals = Approvals(source.model, KubeBinder(api, source.model))
    return advisor, source


def passed(app: TestClient, pod: dict[str, Any], names: list[str]) -> list[str]:
    reply = app.post("/scheduler/filter", json={"Pod": pod, "NodeNames": names})
    assert reply.status_code == 200 and reply.json()["Error"] == "", reply.text
    found: list[str] = reply.json()["NodeNames"]
    return found


def top(app: TestClient, pod: dict[str, Any], names: list[str]) -> str:
    reply = app.post("/scheduler/prioritize", json={"Pod": pod, "NodeNames": names})
    assert reply.status_code == 200
    scores: dict[str, int] = {entry["Host"]: entry["Score"] for entry in reply.json()}
    return max(sorted(scores), key=lambda name: scores[name])


def bind(app: TestClient, pod: dict[str, Any], node: str) -> str:
    meta = pod["metadata"]
    body = {"PodName": meta["name"], "PodNamespace": meta["namespace"], "PodUID": meta["uid"], "Node": node}
    reply = app.post("/scheduler/bind", json=body)
    assert reply.status_code == 200, reply.text
    error: str = reply.json()["Error"]
    return error


def test_a_pick_counts_as_taken_before_the_watch_shows_its_binding(fake: FakeApiServer) -> None:
    advisor, source = replica(fake)
    with TestClient(create_app(advisor)) as app:
        first = share("first")
        [chosen] = passed(app, first, ["t4-a", "t4-b"])  # the best node alone: kube-scheduler binds it
        # Nothing is bound yet (kube-scheduler binds asynchronously): the pick alone takes 600 of 1000.
        other = "t4-b" if chosen == "t4-a" else "t4-a"
        assert passed(app, share("second"), ["t4-a", "t4-b"]) == [other]
    source.stop()


def test_a_filter_that_leaves_one_node_is_that_node_taken_and_a_retry_forgets_it(fake: FakeApiServer) -> None:
    advisor, source = replica(fake)
    with TestClient(create_app(advisor)) as app:
        first = share("first")
        # One node left: kube-scheduler skips prioritize and binds it, so the filter's answer is the pick.
        assert passed(app, first, ["t4-a"]) == ["t4-a"]
        assert passed(app, share("second"), ["t4-a"]) == []
        # The same pod asked about again (its binding failed, or it was retried) is not in its own way.
        assert passed(app, first, ["t4-a"]) == ["t4-a"]
    source.stop()


def test_the_watch_replaces_the_pick_and_the_pod_is_counted_once(fake: FakeApiServer) -> None:
    advisor, source = replica(fake)
    with TestClient(create_app(advisor)) as app:
        first = share("first")
        fake.put("pods", first)
        assert passed(app, first, ["t4-a"]) == ["t4-a"]
        fake.bind("openb/first", {"target": {"name": "t4-a"}})  # as kube-scheduler's own binder would
        eventually(lambda: len(source.model.assumed) == 0)
        node = source.state.node("t4-a")
        assert node is not None and [p.key for p in node.pods] == ["openb/first"]  # once: 1000 - 600 = 400 free
        assert node.shares is not None and node.shares.free == (400,)
    source.stop()


def test_the_bind_verb_claims_the_node_in_its_lease_then_binds_and_writes_no_node(fake: FakeApiServer) -> None:
    advisor, source = replica(fake)
    first = share("first")
    fake.put("pods", first)
    with TestClient(create_app(advisor)) as app:
        assert passed(app, first, ["t4-a"]) == ["t4-a"]
        assert bind(app, first, "t4-a") == ""
    assert fake.bindings == [("openb/first", "t4-a")]
    lease = fake.objects["leases"]["gpu-advisor/claims-t4-a"]
    claims = read_claims("t4-a", lease["metadata"]["annotations"][ANNOTATION_CLAIMS])
    assert [c.uid for c in claims] == ["uid-first"]
    assert fake.writes == {"leases": 1, "pods/binding": 1}, "no Node is written: the claim is the Lease's"
    source.stop()


def test_two_replicas_cannot_both_bind_one_gpu(fake: FakeApiServer) -> None:
    """Replica B has not heard A's binding yet (its watch lags: here it never runs after the first list),
    so its own view would approve the second pod; its bind's write is refused (409), it reads the node
    again, sees A's claim, and refuses the binding with the reason."""
    a, source_a = replica(fake)
    b, source_b = replica(fake, watch=False)
    source_b.model.replace("nodes", list(fake.objects["nodes"].values()))
    source_b.model.replace("pods", [])
    source_b.state.mark_ready(time.time())
    first, second = share("first"), share("second")
    fake.put("pods", first)
    fake.put("pods", second)
    with TestClient(create_app(a)) as app_a, TestClient(create_app(b)) as app_b:
        assert passed(app_a, first, ["t4-a"]) == ["t4-a"]
        assert passed(app_b, second, ["t4-a"]) == ["t4-a"]  # B's stale view: it has not heard of the first
        assert bind(app_a, first, "t4-a") == ""
        why = bind(app_b, second, "t4-a")
    assert "no longer has room" in why and "t4-a" in why, why
    assert fake.conflicts == 1  # B created the node's Lease too late: 409 AlreadyExists, then read it
    assert fake.bindings == [("openb/first", "t4-a")]
    assert fake.writes["nodes"] == 0
    source_a.stop()


def test_a_claim_lapses_after_its_time_when_no_binding_shows() -> None:
    now = [1000.0]
    state = ClusterState("kube")
    source = KubeSource(None, state, clock=lambda: now[0])
    source.model.replace("nodes", [replay_node_object("t4-a", "T4", 64_000, 262_144, 1)])
    source.model.replace("pods", [])
    source.model.assume(share("first"), "t4-a")
    node = state.node("t4-a")
    assert node is not None and node.shares is not None and node.shares.free == (400,)
    now[0] += CLAIM_TTL_S - 1
    source.model.sweep()
    assert (state.node("t4-a") or node).shares.free == (400,)  # type: ignore[union-attr]
    now[0] += 2  # past 30 s: the pod was deleted or never bound
    source.model.sweep()
    lapsed = state.node("t4-a")
    assert lapsed is not None and lapsed.shares is not None and lapsed.shares.free == (1000,)


def test_the_bind_check_is_the_filter_without_holds(fake: FakeApiServer) -> None:
    advisor, source = replica(fake)
    node = source.state.node("t4-a")
    assert node is not None
    assert refusal(advisor, share("first"), node) is None
    big = replay_pod_object(PodShape(2000, 4096, 2, 1000), "big")  # two whole GPUs on a one-GPU node
    assert refusal(advisor, big, node) is not None
    source.stop()


def test_before_the_model_has_synced_every_verb_fails_closed() -> None:
    state = ClusterState("kube")
    KubeSource(None, state)  # a live source whose watch has not listed yet
    advisor = Advisor(state, None, ScoringPolicy())
    with TestClient(create_app(advisor)) as app:
        reply = app.post("/scheduler/filter", json={"Pod": share("first"), "NodeNames": ["t4-a"]})
        assert reply.status_code == 200 and reply.json()["Error"] == NOT_SYNCED
        assert bind(app, share("first"), "t4-a") == NOT_SYNCED


def test_a_snapshot_cannot_bind_and_says_why() -> None:
    state = ClusterState("snapshot cluster.json")
    state.mark_ready(0.0)
    with TestClient(create_app(Advisor(state, None, ScoringPolicy()))) as app:
        why = bind(app, share("first"), "t4-a")
    assert "no API server to bind through" in why


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"", "empty body"),
        (b"[1]", "ExtenderBindingArgs"),
        (json.dumps({"PodName": "p", "PodNamespace": "ml"}).encode(), "Node"),
        (json.dumps({"PodName": 7, "PodNamespace": "ml", "Node": "n"}).encode(), "PodName"),
        (b"{not json", "JSON"),
    ],
)
def test_a_bad_bind_body_is_a_400_that_says_what_is_wrong(body: bytes, says: str) -> None:
    state = ClusterState("kube")
    state.mark_ready(0.0)
    with TestClient(create_app(Advisor(state, None, ScoringPolicy()))) as app:
        reply = app.post("/scheduler/bind", content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 400 and says in reply.json()["detail"], reply.text


def test_the_captured_bind_body_is_read_as_kube_scheduler_sent_it(fake: FakeApiServer) -> None:
    """kube-scheduler v1.36's ExtenderBindingArgs, captured: PascalCase, no json tags."""
    captured = json.loads((SHARED_FIXTURES / "kube" / "extender-bind.json").read_text())
    pod = share(captured["PodName"]) | {}
    pod["metadata"] |= {"namespace": captured["PodNamespace"], "uid": captured["PodUID"]}
    fake.put("nodes", replay_node_object(captured["Node"], "T4", 64_000, 262_144, 1))
    fake.put("pods", pod)
    advisor, source = replica(fake)
    with TestClient(create_app(advisor)) as app:
        assert passed(app, pod, [captured["Node"]]) == [captured["Node"]]  # kube-scheduler filters first
        reply = app.post("/scheduler/bind", json=captured)
    assert reply.status_code == 200 and reply.json() == {"Error": ""}
    assert fake.bindings == [(f"{captured['PodNamespace']}/{captured['PodName']}", captured["Node"])]
    source.stop()


def test_the_bind_verb_records_each_shares_gpu_so_bind_order_decides_the_packing(fake: FakeApiServer) -> None:
    """Two T4s. Best fit in bind order: 400 → GPU 0 (600 left), 400 → GPU 0 (200), 600 → GPU 1 (400); the
    second 600 has no GPU, whatever order the names sort in. Each bound share carries its GPU index, so no
    replica re-packs them in another order (by name, when bindings land in the same second). Each pod is
    filtered first with two candidates (no pick: nothing assumed, both nodes approved), as kube-scheduler's
    cycle does before it binds; served with ``--filter-passes fitting``, as the best node alone would be a pick)."""
    fake.put("nodes", replay_node_object("t4-pair", "T4", 64_000, 262_144, 2))
    shapes = {"c": 400, "d": 400, "a": 600, "b": 600}
    pods = {}
    for name, milli in shapes.items():
        pods[name] = replay_pod_object(PodShape(2000, 4096, 1, milli), name)
        pods[name]["metadata"]["uid"] = f"uid-{name}"
        pods[name]["spec"]["schedulerName"] = "gpu-advisor"
        fake.put("pods", pods[name])
    advisor, source = replica(fake)
    advisor.filter_passes = "fitting"
    with TestClient(create_app(advisor)) as app:
        for name in shapes:
            assert passed(app, pods[name], ["t4-pair", "t4-a"]) == ["t4-pair", "t4-a"]
        answers = {name: bind(app, pods[name], "t4-pair") for name in shapes}
    assert answers["c"] == answers["d"] == answers["a"] == ""
    assert "no longer has room" in answers["b"]
    index = {n: fake.objects["pods"][f"openb/{n}"]["metadata"]["annotations"].get(ALIBABA_INDEX) for n in "cda"}
    assert index == {"c": "0", "d": "0", "a": "1"}
    source.stop()
