"""The extender over HTTP, in process: behaviour, bad input, health and metrics."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.http.wire import ExtenderFilterResult, HostPriority

SIMULATED = ["dgx1-v100-a", "dgx1-v100-b", "hgx-h100-a", "l40s-a", "a100-mig-a", "t4-ts-a"]


def args(
    limits: dict[str, str], names: list[str] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "Pod": {
            "metadata": {"name": "p", "namespace": "ml", "annotations": annotations or {}},
            "spec": {"containers": [{"name": "c", "resources": {"limits": limits}}]},
        },
        "Nodes": None,
        "NodeNames": SIMULATED if names is None else names,
    }


def test_a_4_gpu_pod_is_filtered_and_ranked_with_reasons(fitting_api: TestClient) -> None:
    reply = fitting_api.post("/scheduler/filter", json=args({"nvidia.com/gpu": "4"}))
    assert reply.status_code == 200
    result = ExtenderFilterResult.model_validate(reply.json())
    assert result.NodeNames is not None and "a100-mig-a" not in result.NodeNames
    assert result.FailedAndUnresolvableNodes == {"a100-mig-a": "has no nvidia.com/gpu"}
    ranked = [
        HostPriority.model_validate(h)
        for h in fitting_api.post("/scheduler/prioritize", json=args({"nvidia.com/gpu": "4"})).json()
    ]
    scores = {h.Host: h.Score for h in ranked}
    # The free NVLink quad 4-7 of dgx1-v100-a beats dgx1-v100-b's scattered 0,4,5,6 and l40s-a's PCIe quad.
    assert scores["dgx1-v100-a"] > scores["dgx1-v100-b"] and scores["dgx1-v100-a"] > scores["l40s-a"]
    assert all(0 <= s <= 10 for s in scores.values())


def test_pods_without_gpus_pass_untouched(api: TestClient) -> None:
    reply = api.post("/scheduler/filter", json=args({"cpu": "1"})).json()
    assert reply["NodeNames"] == SIMULATED and reply["FailedNodes"] == {} and reply["Error"] == ""
    # Every node equal for a CPU pod here: one is raised to 1, the first in tie order (smallest CRC-32 of
    # its name: dgx1-v100-b's 36378989), so kube-scheduler binds where the replay would.
    scores = {h["Host"]: h["Score"] for h in api.post("/scheduler/prioritize", json=args({"cpu": "1"})).json()}
    assert scores == {name: int(name == "dgx1-v100-b") for name in SIMULATED}


def test_interconnect_nvlink_rejects_the_pcie_node_in_failed_and_unresolvable(fitting_api: TestClient) -> None:
    body = args({"nvidia.com/gpu": "2"}, annotations={"gpu-advisor.io/interconnect": "nvlink"})
    result = fitting_api.post("/scheduler/filter", json=body).json()
    assert (
        result["FailedAndUnresolvableNodes"]["l40s-a"]
        == "l40s-a: PCIe only, no NVLink; pod requires NVLink between 2 GPUs"
    )


def test_a_bad_gpu_advisor_annotation_fails_open_on_that_knob_only(api: TestClient) -> None:
    body = args({"nvidia.com/gpu": "2"}, annotations={"gpu-advisor.io/gpu-memory": "lots"})
    result = api.post("/scheduler/filter", json=body).json()
    assert "dgx1-v100-a" in result["NodeNames"] and result["Error"] == ""


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"this is not json", 400, "body is not JSON"),
        (b"", 400, "empty body"),
        (b"[1, 2, 3]", 400, "body must be a JSON object"),
        (json.dumps({"NodeNames": ["a"]}).encode(), 400, "Pod: Field required"),
        (json.dumps({"Pod": "a pod", "NodeNames": ["a"]}).encode(), 400, "Pod: Input should be a valid dictionary"),
        (json.dumps({"Pod": {}, "NodeNames": "dgx1-v100-a"}).encode(), 400, "NodeNames: Input should be a valid list"),
        (json.dumps({"Pod": {}, "Nodes": {"items": "x"}}).encode(), 400, "Nodes.items: Input should be a valid list"),
        (json.dumps({"Pod": {}}).encode(), 400, "neither NodeNames nor Nodes is set"),
        (b"\xff\xfe\x00garbage", 400, "body is not JSON"),
    ],
    ids=[
        "not-json",
        "empty",
        "array",
        "missing-pod",
        "pod-wrong-type",
        "names-wrong-type",
        "items-wrong-type",
        "no-nodes",
        "binary",
    ],
)
def test_malformed_bodies_get_400_with_a_message_and_the_service_keeps_serving(
    api: TestClient, body: bytes, status: int, message: str
) -> None:
    for verb in ("filter", "prioritize"):
        reply = api.post(f"/scheduler/{verb}", content=body, headers={"Content-Type": "application/json"})
        assert reply.status_code == status, reply.text
        assert message in reply.json()["detail"]
    assert api.post("/scheduler/filter", json=args({"nvidia.com/gpu": "1"})).status_code == 200


def test_ten_megabytes_of_node_names_is_413(api: TestClient) -> None:
    names = [f"node-{i:08d}-with-a-long-name-to-fill-the-body" for i in range(220_000)]
    body = json.dumps(args({"nvidia.com/gpu": "1"}, names)).encode()
    assert len(body) > 10_000_000
    reply = api.post("/scheduler/filter", content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 413 and "over the limit of 20000" in reply.json()["detail"]


def test_a_body_over_the_byte_limit_is_413_before_parsing(api: TestClient, advisor) -> None:  # type: ignore[no-untyped-def]
    advisor.max_body_bytes = 1000
    reply = api.post("/scheduler/prioritize", content=b"x" * 5000, headers={"Content-Type": "application/json"})
    assert reply.status_code == 413 and "1000-byte limit" in reply.json()["detail"]


def test_health_readiness_and_metrics(api: TestClient) -> None:
    assert api.get("/healthz").json() == {"status": "ok"}
    assert api.get("/readyz").json() == {"ready": True, "source": "simulated", "nodes": 7}
    api.post("/scheduler/filter", json=args({"nvidia.com/gpu": "1"}))
    metrics = api.get("/metrics").text
    assert 'gpu_advisor_extender_requests_total{outcome="ok",verb="filter"} 1.0' in metrics
    assert "gpu_advisor_nodes 7.0" in metrics


def test_not_ready_until_the_cluster_model_has_synced(advisor) -> None:  # type: ignore[no-untyped-def]
    from extender.cluster.state import ClusterState
    from gpu_advisor.app import create_app

    advisor.state = ClusterState("kube")
    with TestClient(create_app(advisor)) as client:
        reply = client.get("/readyz")
    assert reply.status_code == 503 and "has not synced yet" in reply.json()["reason"]


def test_a_node_that_changes_is_judged_again(api: TestClient, advisor) -> None:  # type: ignore[no-untyped-def]
    from extender.cluster.state import node_state
    from extender.sources.snapshot import parse_snapshot

    body = args({"nvidia.com/gpu": "4"}, names=["dgx1-v100-a"])
    assert api.post("/scheduler/filter", json=body).json()["NodeNames"] == ["dgx1-v100-a"]
    # The quad 4-7 gets taken: the node now has no free GPU and must be rejected at once.
    full = parse_snapshot({"nodes": [{"name": "dgx1-v100-a", "machine": "dgx1-v100", "free": []}]}).nodes[0]
    advisor.state.put(node_state(full))
    reply = api.post("/scheduler/filter", json=body).json()
    assert reply["NodeNames"] == [] and reply["FailedNodes"] == {
        "dgx1-v100-a": "0 of 8 GPUs free by its last report, pod needs 4"
    }


def test_a_reused_reply_follows_a_node_that_changes(api: TestClient, advisor) -> None:  # type: ignore[no-untyped-def]
    from extender.cluster.state import node_state
    from extender.sources.snapshot import parse_snapshot

    body = args({"nvidia.com/gpu": "4"})
    first = [api.post("/scheduler/prioritize", json=body).content for _ in range(3)]
    assert first[0] == first[1] == first[2]  # the third is the second's very bytes, reused
    full = parse_snapshot({"nodes": [{"name": "dgx1-v100-a", "machine": "dgx1-v100", "free": []}]}).nodes[0]
    advisor.state.put(node_state(full))
    scores = {h["Host"]: h["Score"] for h in api.post("/scheduler/prioritize", json=body).json()}
    assert scores["dgx1-v100-a"] == 0 and json.loads(first[2])[0] == {"Host": "dgx1-v100-a", "Score": 10}


def test_node_names_that_are_not_all_strings_get_400_naming_the_item(api: TestClient) -> None:
    body = args({"nvidia.com/gpu": "1"}, names=["dgx1-v100-a", 7])  # type: ignore[list-item]
    reply = api.post("/scheduler/filter", json=body)
    assert reply.status_code == 400 and "NodeNames.1: Input should be a valid string" in reply.json()["detail"]
