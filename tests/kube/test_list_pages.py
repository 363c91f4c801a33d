"""The live source lists in pages (``limit`` and ``continue``, as client-go's reflector) and keeps of each
object only what the model reads: a Node slimmed, any other object without its ``managedFields``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from extender.cluster.state import ClusterState
from extender.sources import kube_watch
from extender.sources.kube_model import strip_managed_fields
from extender.sources.kube_watch import KubeSource
from tests.containment.live import eventually
from tests.fakes.apiserver import FakeApiServer, node, pod

MANAGED = [{"manager": "kubectl-create", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]


def managed(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"]["managedFields"] = MANAGED
    return obj


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(kube_watch, "LIST_PAGE", 4)
    return 4


@pytest.fixture
def fake(small_pages: int) -> Iterator[FakeApiServer]:
    with FakeApiServer() as server:
        for i in range(10):
            server.put("nodes", managed(node(f"n-{i:02d}", gpus=8, labels={"zone": "a"})))
        for i in range(9):
            server.put("pods", managed(pod(f"p-{i}", f"n-{i:02d}", 1)))
        yield server


def start(fake: FakeApiServer) -> KubeSource:
    cfg = client.Configuration()
    cfg.host = fake.url
    src = KubeSource(client.CoreV1Api(client.ApiClient(cfg)), ClusterState("kube"), watch_timeout_s=2, backoff_s=0.05)
    src.start()
    assert src.state.wait_ready(8)
    return src


def test_nodes_and_pods_are_listed_in_pages_and_every_one_is_kept(fake: FakeApiServer) -> None:
    src = start(fake)
    try:
        assert sorted(src.nodes) == [f"n-{i:02d}" for i in range(10)]
        assert len(src.pods) == 9
        assert all(src.state.node(f"n-{i:02d}").gpu_free_count == 7 for i in range(9))  # type: ignore[union-attr]
        assert fake.pages["nodes"] == 3 and fake.pages["pods"] == 3  # 4 + 4 + 2, and 4 + 4 + 1
        assert fake.list_count["nodes"] == 1 and fake.list_count["pods"] == 1
        lists = [path for method, path, _, _ in fake.requests if method == "GET" and "watch=" not in path]
        assert any("limit=4" in p and "continue=" not in p for p in lists if "/nodes" in p)
        assert any("limit=4" in p and "continue=" in p for p in lists if "/nodes" in p)
    finally:
        src.stop()


def test_a_node_is_kept_slim_and_a_pods_managed_fields_are_not_kept(fake: FakeApiServer) -> None:
    src = start(fake)
    try:
        kept = src.nodes["n-00"]
        assert set(kept) == {"metadata", "spec", "status"}
        assert set(kept["metadata"]) == {"name", "uid", "labels", "annotations", "resourceVersion"}
        assert kept["metadata"]["labels"] == {"zone": "a"}
        assert set(kept["status"]) == {"allocatable", "capacity"}
        fake.put("nodes", managed(node("n-10", gpus=4)))  # and so from the watch
        eventually(lambda: "n-10" in src.nodes)
        assert "managedFields" not in src.nodes["n-10"]["metadata"]
    finally:
        src.stop()


def test_a_continue_token_that_expired_mid_list_lists_again_from_the_start(
    fake: FakeApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = KubeSource._lister
    expired: list[bool] = []

    def expire_once(self: KubeSource, what: str) -> Any:
        fn, extra = real(self, what)

        def first_page_then_expire(**kwargs: Any) -> Any:
            answer = fn(**kwargs)
            if what == "nodes" and not expired and "watch" not in kwargs:
                expired.append(True)
                fake.expire_history()  # the first page's resourceVersion is compacted before the second
                fake.put("nodes", node("n-10", gpus=4))  # and the cluster moved on
            return answer

        return first_page_then_expire, extra

    monkeypatch.setattr(KubeSource, "_lister", expire_once)
    src = start(fake)
    try:
        assert sorted(src.nodes) == [f"n-{i:02d}" for i in range(11)]
        assert fake.list_count["nodes"] == 2, "the 410 on the second page lists again from the first"
    finally:
        src.stop()


def test_strip_managed_fields_leaves_everything_else() -> None:
    obj = managed(pod("p", "n", 1))
    before = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    strip_managed_fields(obj)
    assert obj["metadata"] == before
    strip_managed_fields({"metadata": None})  # an object of the wrong shape is left as it is
    strip_managed_fields([])
