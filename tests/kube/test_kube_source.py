"""The live source, with the real kubernetes client against an HTTP-level fake API server."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client

from extender.cluster.state import ANNOTATION_FREE_GPUS, ANNOTATION_TOPOLOGY, ClusterState, FreeReport
from extender.model.machines import bundled_machines
from extender.model.smi_topo import parse_topo_matrix
from extender.model.topology import GpuTopology
from extender.sources.kube_watch import KubeSource
from gpu_advisor.cli import main
from tests.fakes.apiserver import FakeApiServer, node, pod

DGX1 = parse_topo_matrix(bundled_machines()["dgx1-v100"])


def eventually(check: Callable[[], bool], timeout: float = 8.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    with FakeApiServer() as server:
        server.put("nodes", node("dgx-a", annotations={ANNOTATION_TOPOLOGY: DGX1.to_json()}))
        server.put("nodes", node("plain-b", gpus=4))
        server.put("pods", pod("train", "dgx-a", 4))
        yield server


@pytest.fixture
def source(fake: FakeApiServer) -> Iterator[KubeSource]:
    cfg = client.Configuration()
    cfg.host = fake.url
    src = KubeSource(client.CoreV1Api(client.ApiClient(cfg)), ClusterState("kube"), watch_timeout_s=2, backoff_s=0.05)
    src.start()
    assert src.state.wait_ready(8), "the first list of nodes and pods must mark the model ready"
    yield src
    src.stop()


def free_count(src: KubeSource, name: str) -> int | None:
    state = src.state.node(name)
    return None if state is None else state.gpu_free_count


def test_lists_nodes_and_pods_and_places_bound_pods_on_the_topology(source: KubeSource) -> None:
    dgx = source.state.node("dgx-a")
    assert dgx is not None and dgx.topology == DGX1
    # No free-GPU report: the 4-GPU pod is replayed with NVIDIA's policy, which takes the quad 0-3.
    assert dgx.gpu_free_count == 4 and dgx.free_gpus == (4, 5, 6, 7)
    plain = source.state.node("plain-b")
    assert plain is not None and plain.topology is None and plain.gpu_free_count == 4


def test_watch_events_update_the_model(fake: FakeApiServer, source: KubeSource) -> None:
    fake.put("pods", pod("infer", "plain-b", 3))
    eventually(lambda: free_count(source, "plain-b") == 1)
    fake.put("pods", pod("infer", "plain-b", 3, phase="Succeeded"))
    eventually(lambda: free_count(source, "plain-b") == 4)
    fake.put("nodes", node("new-c", gpus=2))
    eventually(lambda: free_count(source, "new-c") == 2)
    fake.delete("nodes", "new-c")
    eventually(lambda: source.state.node("new-c") is None)


def test_a_free_gpu_report_is_read_and_later_pods_hold_their_predicted_set(
    fake: FakeApiServer, source: KubeSource
) -> None:
    report = FreeReport((2, 3, 4, 5, 6, 7), at=time.time() - 60).to_json()
    fake.put("nodes", node("dgx-a", annotations={ANNOTATION_TOPOLOGY: DGX1.to_json(), ANNOTATION_FREE_GPUS: report}))
    fake.put("pods", pod("late", "dgx-a", 2, bound_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))
    # Bound after the report: assumed to hold what NVIDIA's policy picks from 2..7, here NV2 pair 2-3.
    eventually(lambda: (n := source.state.node("dgx-a")) is not None and n.assumed == (("ml/late", (2, 3)),))
    state = source.state.node("dgx-a")
    assert state is not None and state.free_gpus == (4, 5, 6, 7)


def test_a_dropped_watch_resumes_from_the_last_resource_version_without_relisting(
    fake: FakeApiServer, source: KubeSource
) -> None:
    fake.drop_next_watch["pods"] = 1
    eventually(lambda: fake.watch_count["pods"] >= 1)
    fake.put("pods", pod("a", "plain-b", 1))
    fake.put("pods", pod("b", "plain-b", 1))
    eventually(lambda: free_count(source, "plain-b") == 2)
    assert fake.list_count["pods"] == 1, "a dropped connection resumes the watch, it does not re-list"


def test_an_expired_watch_relists(fake: FakeApiServer, source: KubeSource) -> None:
    eventually(lambda: fake.watch_count["pods"] >= 1)
    fake.expire_history()
    fake.put("pods", pod("after-gone", "plain-b", 2))
    eventually(lambda: fake.list_count["pods"] >= 2 and free_count(source, "plain-b") == 2)
    assert source.relists["pods"] >= 2


def kubeconfig(tmp_path: Path, url: str) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "fake",
                "clusters": [{"name": "fake", "cluster": {"server": url}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}],
            }
        )
    )
    return str(path)


def test_topology_publish_merge_patches_the_nodes_annotations(fake: FakeApiServer, tmp_path: Path) -> None:
    assert (
        main(
            [
                "topology",
                "publish",
                "--node",
                "plain-b",
                "--example",
                "dgx1-v100",
                "--free",
                "0,1",
                "--kubeconfig",
                kubeconfig(tmp_path, fake.url),
            ]
        )
        == 0
    )
    _method, path, headers, body = next(r for r in fake.requests if r[0] == "PATCH")
    assert path == "/api/v1/nodes/plain-b"
    assert headers["Content-Type"] == "application/merge-patch+json"
    annotations = json.loads(body)["metadata"]["annotations"]
    assert GpuTopology.from_json(annotations[ANNOTATION_TOPOLOGY]) == DGX1
    assert FreeReport.from_json(annotations[ANNOTATION_FREE_GPUS]).free == (0, 1)


def test_topology_publish_to_a_missing_node_is_one_line_and_exit_2(
    fake: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "topology",
                "publish",
                "--node",
                "ghost",
                "--example",
                "dgx1-v100",
                "--kubeconfig",
                kubeconfig(tmp_path, fake.url),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert 'API server answered 404 Not Found: nodes "ghost" not found' in err and err.count("\n") == 1
