"""The claims live in one Lease per node in the advisor's namespace, which only the advisor reads and writes:
every replica's watch counts them as the Node annotation was counted, the bind verb writes them under the
Lease's resourceVersion, and no Node is written. Against the HTTP-level fake API server, with the real
kubernetes client and the real watch.

The nodes are one T4 each (1000 milli); the pods ask 600 milli, so a claimed pod leaves 1000 - 600 = 400.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kubernetes.client.exceptions import ApiException

from extender.advice.replay.advisor_policy import replay_node_object
from extender.cluster.claim_leases import CLAIMS_COMPONENT, ClaimLease, lease_name, lease_object, read_lease
from extender.cluster.claims import ANNOTATION_CLAIMS, Claim, claim_object, read_claims, write_claims
from extender.sources.claims_writer import ClaimsWriter, own_namespace
from gpu_advisor.app import create_app
from tests.containment.live import eventually
from tests.fakes.apiserver import FakeApiServer
from tests.kube.test_never_overcommitted import bind, passed, replica, share


def claims_text(*names: str, node: str = "t4-a") -> str:
    """What a replica's bind verb writes for ``names`` bound just now onto ``node``."""
    return write_claims(Claim(f"uid-{n}", node, claim_object(share(n), node), time.time()) for n in names)


def free_milli(source: Any, node: str) -> tuple[int, ...]:
    state = source.state.node(node)
    return state.shares.free if state is not None and state.shares is not None else ()


def test_another_replicas_lease_counts_on_its_node_only(fake: FakeApiServer) -> None:
    _, source = replica(fake)
    fake.put("leases", lease_object("gpu-advisor", "t4-a", "uid-t4-a", claims_text("first")))
    eventually(lambda: free_milli(source, "t4-a") == (400,))
    assert free_milli(source, "t4-b") == (1000,)
    source.stop()


def test_a_lease_elsewhere_or_without_the_label_is_not_read(fake: FakeApiServer) -> None:
    _, source = replica(fake)
    elsewhere = lease_object("kube-system", "t4-a", "uid-t4-a", claims_text("first"))
    unlabelled = lease_object("gpu-advisor", "t4-b", "uid-t4-b", claims_text("second", node="t4-b"))
    unlabelled["metadata"]["labels"] = {}
    fake.put("leases", elsewhere)
    fake.put("leases", unlabelled)
    fake.put("nodes", replay_node_object("t4-c", "T4", 64_000, 262_144, 1))  # an event after both
    eventually(lambda: source.state.node("t4-c") is not None)
    assert free_milli(source, "t4-a") == free_milli(source, "t4-b") == (1000,)
    source.stop()


def test_the_claim_on_the_node_annotation_of_an_older_replica_still_counts_and_is_never_written(
    fake: FakeApiServer,
) -> None:
    older = replay_node_object("t4-a", "T4", 64_000, 262_144, 1)
    older["metadata"].setdefault("annotations", {})[ANNOTATION_CLAIMS] = claims_text("first")
    fake.put("nodes", older)
    advisor, source = replica(fake)
    assert free_milli(source, "t4-a") == (400,)
    second = share("second")
    fake.put("pods", second)
    with TestClient(create_app(advisor)) as app:
        assert passed(app, second, ["t4-a"]) == []  # 600 + 600 > 1000
        assert bind(app, second, "t4-a").startswith("refused to bind openb/second: ")  # never approved there
    assert fake.writes["nodes"] == 0
    source.stop()


def test_a_second_bind_on_a_node_patches_its_lease_under_its_resource_version(fake: FakeApiServer) -> None:
    fake.put("nodes", replay_node_object("t4-pair", "T4", 64_000, 262_144, 2))
    advisor, source = replica(fake)
    first, second = share("first"), share("second")
    fake.put("pods", first)
    fake.put("pods", second)
    with TestClient(create_app(advisor)) as app:
        for pod in (first, second):  # kube-scheduler filters each first: one node passed, the pick
            assert passed(app, pod, ["t4-pair"]) == ["t4-pair"]
        assert bind(app, first, "t4-pair") == bind(app, second, "t4-pair") == ""
    writes = [(m, p) for m, p, _, _ in fake.requests if "/leases" in p and m != "GET"]
    assert [m for m, _ in writes] == ["POST", "PATCH"]  # created on the first claim, then patched
    assert writes[1][1].endswith("/namespaces/gpu-advisor/leases/claims-t4-pair")
    lease = fake.objects["leases"]["gpu-advisor/claims-t4-pair"]
    assert {c.uid for c in read_claims("t4-pair", lease["metadata"]["annotations"][ANNOTATION_CLAIMS])} == {
        "uid-first",
        "uid-second",
    }
    assert lease["metadata"]["labels"] == {"app.kubernetes.io/component": CLAIMS_COMPONENT}
    assert lease["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "t4-pair", "uid": "uid-t4-pair"}
    ]
    source.stop()


def test_a_lease_gone_with_its_node_is_created_again(fake: FakeApiServer) -> None:
    """The model still has a Lease the garbage collector has deleted: the patch gets 404, the bind verb
    reads again, finds none, and creates it."""
    advisor, source = replica(fake, watch=False)
    source.model.replace("nodes", list(fake.objects["nodes"].values()))
    source.model.replace("pods", [])
    gone = lease_object("gpu-advisor", "t4-a", "uid-t4-a", write_claims([]))
    gone["metadata"]["resourceVersion"] = "7"
    source.model.replace("leases", [gone])
    source.state.mark_ready(time.time())
    first = share("first")
    fake.put("pods", first)
    with TestClient(create_app(advisor)) as app:
        assert passed(app, first, ["t4-a"]) == ["t4-a"]
        assert bind(app, first, "t4-a") == ""
    assert [m for m, p, _, _ in fake.requests if "/leases" in p] == ["PATCH", "GET", "POST"]
    source.stop()


def test_readiness_waits_for_the_claims_leases() -> None:
    """A replica that cannot read the other replicas' claims could approve what they have bound."""
    with FakeApiServer() as fake:
        fake.put("nodes", replay_node_object("t4-a", "T4", 64_000, 262_144, 1))
        fake.forbidden.add("leases")
        _, source = replica(fake, watch=False)
        source.start()
        assert not source.state.wait_ready(1.0)
        fake.forbidden.clear()
        assert source.state.wait_ready(8)
        source.stop()


@pytest.mark.parametrize(
    ("node", "name"),
    [
        ("t4-a", "claims-t4-a"),
        ("n" * 246, "claims-" + "n" * 246),  # 7 + 246 = 253 characters: the longest name there is
    ],
)
def test_a_lease_is_named_after_its_node_when_the_name_fits(node: str, name: str) -> None:
    assert lease_name(node) == name


def test_past_246_characters_a_lease_is_named_by_a_digest_of_the_node_name() -> None:
    long_a, long_b = "a" * 247, "a" * 252 + "b"  # 7 + 247 = 254 > 253
    assert lease_name(long_a) == lease_name(long_a) != lease_name(long_b)
    assert all(lease_name(n).startswith("claims-") and len(lease_name(n)) == 7 + 40 for n in (long_a, long_b))


def test_a_lease_reads_back_as_the_node_it_claims_for() -> None:
    obj = lease_object("gpu-advisor", "n" * 250, "uid-n", "{}")
    obj["metadata"]["resourceVersion"] = "12"
    assert read_lease(obj) == ClaimLease("n" * 250, lease_name("n" * 250), "12", "{}")
    obj["metadata"]["name"] = "claims-someone-else"
    assert read_lease(obj) is None  # not the name the advisor gives that node's claims
    assert read_lease({"metadata": {"name": "claims-x"}}) is None


@pytest.mark.parametrize(
    ("chosen", "env", "in_file", "found"),
    [
        ("mine", {"POD_NAMESPACE": "pods"}, "file", "mine"),  # the flag first
        (None, {"POD_NAMESPACE": "pods"}, "file", "pods"),  # then the downward API's variable
        (None, {}, "file", "file"),  # then the ServiceAccount's namespace file
        (None, {}, None, "gpu-advisor"),  # not in a pod: the default
    ],
)
def test_the_claims_namespace_is_the_pods_own_unless_chosen(
    tmp_path: Path, chosen: str | None, env: dict[str, str], in_file: str | None, found: str
) -> None:
    namespace_file = tmp_path / "namespace"
    if in_file is not None:
        namespace_file.write_text(in_file + "\n")
    assert own_namespace(chosen, "gpu-advisor", env, namespace_file) == found


def test_a_missing_claims_namespace_is_named_in_the_refusal() -> None:
    """Creating a node's first claims Lease in a namespace that does not exist: 404, said as such."""

    def send(method: str, path: str, body: object, content_type: str) -> bytes:
        raise ApiException(status=404, reason="Not Found")

    with pytest.raises(ApiException) as refused:
        ClaimsWriter("gpu-advisor", send).write("t4-a", "uid-t4-a", write_claims([]), None)
    assert refused.value.status == 404
    assert "the claims namespace gpu-advisor must exist" in str(refused.value.reason)


def test_a_nodes_claims_are_read_once_per_text_and_only_its_current_text_is_kept() -> None:
    # Every binding on a node writes it a new text: earlier texts read are not kept (they held 19 MiB of
    # decoded claims at 5,000 nodes after 2,000 shares), the current one is read once.
    from extender.cluster import claims as module

    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": {"containers": []}}
    texts = [write_claims([Claim(f"u{i}", "n-kept", claim_object(pod, "n-kept"), 1.0 + i)]) for i in range(5)]
    for text in texts:
        assert [c.uid for c in read_claims("n-kept", text)] == [f"u{texts.index(text)}"]
    assert module._LAST_READ["n-kept"][0] == texts[-1]  # one text kept for the node: the last
    first = read_claims("n-kept", texts[-1])
    assert first[0] is read_claims("n-kept", texts[-1])[0]  # read once: the same claims handed out again
