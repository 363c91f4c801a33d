"""``serve --cluster kube`` follows DRA objects: the live list+watch of ResourceSlices, ResourceClaims and
ResourceClaimTemplates, with the real kubernetes client against an API server on 127.0.0.1."""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from extender.cluster.state import ClusterState
from extender.sources.kube_watch import KubeSource
from tests.dra.objects import load
from tests.fakes.apiserver import FakeApiServer
from tests.kube.test_kube_source import eventually

DRA_PLURALS = ("resourceslices", "resourceclaims", "resourceclaimtemplates")


def unallocated_claim() -> dict[str, Any]:
    claim = copy.deepcopy(load("dra-resourceclaim-allocated.json"))
    del claim["status"]
    return claim


def start(fake: FakeApiServer) -> KubeSource:
    cfg = client.Configuration()
    cfg.host = fake.url
    src = KubeSource(client.CoreV1Api(client.ApiClient(cfg)), ClusterState("kube"), watch_timeout_s=2, backoff_s=0.05)
    src.wait = lambda _s: src._stop.wait(0.05)  # ask again soon: the test sees a not-offered API asked often
    src.start()
    assert src.state.wait_ready(8), "nodes, pods and the DRA lists (or their absence) must mark the model ready"
    return src


@pytest.fixture
def dra_fake() -> Iterator[FakeApiServer]:
    """Two nodes of 4 H100 published as ResourceSlices, the two-GPU claim not yet allocated."""
    with FakeApiServer(serve_dra=True) as fake:
        for item in load("handmade-nodes.json")["items"]:
            fake.put("nodes", item)
        fake.put("resourceslices", load("dra-resourceslice.json"))
        fake.put("resourceslices", load("handmade-resourceslice-node-2.json"))
        fake.put("resourceclaimtemplates", load("dra-resourceclaimtemplate.json"))
        fake.put("resourceclaims", unallocated_claim())
        yield fake


def free(src: KubeSource, name: str) -> tuple[int, ...] | None:
    node = src.state.node(name)
    return None if node is None else node.free_gpus


def test_slices_listed_at_start_give_each_node_its_gpus(dra_fake: FakeApiServer) -> None:
    src = start(dra_fake)
    try:
        # 4 devices in each node's slice, no claim allocated yet: all four free on both.
        assert {n.name: (n.gpu_total, n.free_gpus) for n in src.state.nodes()} == {
            "dra-node-1": (4, (0, 1, 2, 3)),
            "dra-node-2": (4, (0, 1, 2, 3)),
        }
    finally:
        src.stop()


def test_a_claim_allocated_while_the_watch_runs_takes_its_gpus_off_the_node(dra_fake: FakeApiServer) -> None:
    src = start(dra_fake)
    try:
        node_1_before = src.state.node("dra-node-1")
        # The scheduler allocates gpu-0 and gpu-1 of dra-node-2: 4 - 2 = 2 free, GPUs 2 and 3.
        dra_fake.put("resourceclaims", load("dra-resourceclaim-allocated.json"))
        eventually(lambda: free(src, "dra-node-2") == (2, 3))
        assert src.state.node("dra-node-1") is node_1_before, "a claim on dra-node-2 rebuilds only dra-node-2"
        # Then the pod binds: it holds the claim's 2 GPUs, which are already off the free set.
        dra_fake.put("pods", load("dra-pod-bound.json"))
        eventually(
            lambda: (
                [(p.key, p.request.gpus) for p in src.state.node("dra-node-2").pods]  # type: ignore[union-attr]
                == [("default/dra-pod", 2)]
            )
        )
        assert free(src, "dra-node-2") == (2, 3)
        # The claim released (deleted with its pod's end): all 4 free again.
        dra_fake.delete("pods", "default/dra-pod")
        dra_fake.delete("resourceclaims", "default/two-gpus")
        eventually(lambda: free(src, "dra-node-2") == (0, 1, 2, 3))
    finally:
        src.stop()


def test_a_slice_published_later_gives_its_node_gpus(dra_fake: FakeApiServer) -> None:
    dra_fake.delete("resourceslices", "dra-node-2-gpu.nvidia.com")
    src = start(dra_fake)
    try:
        assert src.state.node("dra-node-2").gpu_total == 0  # type: ignore[union-attr]
        dra_fake.put("resourceslices", load("handmade-resourceslice-node-2.json"))
        eventually(lambda: free(src, "dra-node-2") == (0, 1, 2, 3))
    finally:
        src.stop()


def test_a_cluster_without_the_dra_api_is_ready_and_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="extender.sources.kube_watch")
    with FakeApiServer() as fake:  # resource.k8s.io/v1 answers 404
        for item in load("handmade-nodes.json")["items"]:
            fake.put("nodes", item)
        src = start(fake)
        try:

            def asked() -> int:
                return sum(1 for _, path, _, _ in fake.requests if "/resource.k8s.io/v1/" in path)

            eventually(lambda: asked() >= 12)  # each of the three asked again, at least 4 times
            assert {n.name: n.gpu_total for n in src.state.nodes()} == {"dra-node-1": 0, "dra-node-2": 0}
            assert src.health.degradations(src.clock()) == []  # not offered is no error and no retry
            said = [r.getMessage() for r in caplog.records if "does not offer" in r.getMessage()]
            assert sorted(said) == [
                f"the API server does not offer {plural} (404 Not Found): DRA GPUs are not read"
                for plural in sorted(DRA_PLURALS)
            ]
        finally:
            src.stop()


def test_a_pod_seen_before_its_claim_counts_the_claims_gpus_once_the_claim_arrives(
    dra_fake: FakeApiServer,
) -> None:
    dra_fake.delete("resourceclaims", "default/two-gpus")
    src = start(dra_fake)
    try:
        # The pod's watch event comes first: its claim unknown, it holds no GPUs the model sees.
        dra_fake.put("pods", load("dra-pod-bound.json"))
        eventually(lambda: len(src.model.claim_pods) == 1)  # kept to be read again when its claim comes
        assert not src.state.node("dra-node-2").pods  # type: ignore[union-attr]
        # Then the claim: the pod is re-read through it and holds 2 GPUs.
        dra_fake.put("resourceclaims", load("dra-resourceclaim-allocated.json"))
        eventually(lambda: [p.request.gpus for p in src.state.node("dra-node-2").pods] == [2])  # type: ignore[union-attr]
        assert free(src, "dra-node-2") == (2, 3)
    finally:
        src.stop()


def source_states(src: KubeSource) -> dict[str, str]:
    """The state ``gpu_advisor_source_state`` reports each watch in (its series at 1)."""
    found: dict[str, str] = {}
    for metric in src.health.collect():
        if metric.name == "gpu_advisor_source_state":
            found |= {s.labels["resource"]: s.labels["state"] for s in metric.samples if s.value == 1}
    return found


def test_dra_apis_the_server_does_not_offer_read_not_offered_until_it_serves_them() -> None:
    with FakeApiServer() as fake:  # resource.k8s.io/v1 answers 404
        for item in load("handmade-nodes.json")["items"]:
            fake.put("nodes", item)
        src = start(fake)
        try:
            watching = dict.fromkeys(("nodes", "pods", "leases"), "watching")
            not_offered = watching | dict.fromkeys(DRA_PLURALS, "not_offered")
            eventually(lambda: source_states(src) == not_offered)
            fake.serve_dra = True  # the cluster upgraded to Kubernetes 1.34: the next quiet ask lists them
            eventually(lambda: source_states(src) == dict.fromkeys(not_offered, "watching"))
        finally:
            src.stop()
