"""Every POST endpoint bounds the work one request can cause, and refuses past a limit with a status
and a message that names it: body size (413), nesting (400), YAML alias expansion (413), snapshot
size (422), bodies held at once (503)."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from benchmarks.hostile import alias_bomb, big_snapshot, max_size_body, topo_matrix
from extender.http.advisor import Advisor
from extender.http.limits import MIB, Limits
from gpu_advisor.app import Edge, build_app

POSTS = [
    "/scheduler/filter",
    "/scheduler/prioritize",
    "/v1/dry-run",
    "/admission/mutate",
    "/admission/validate",
    "/admission/validate/enforce",
]


@pytest.mark.parametrize("path", POSTS)
def test_json_nested_100k_deep_is_a_400_naming_the_depth_on_every_post(api: TestClient, path: str) -> None:
    reply = api.post(path, content=b"[" * 100_000 + b"]" * 100_000, headers={"Content-Type": "application/json"})
    assert reply.status_code == 400 and "deeper than" in reply.json()["detail"]


@pytest.mark.parametrize("path", ["/v1/dry-run", "/admission/validate"])
def test_json_nested_past_100_levels_is_refused_though_the_parser_reads_it(api: TestClient, path: str) -> None:
    body = b'{"a":' * 150 + b"1" + b"}" * 150  # 150 levels: json reads it, gpu-advisor does not
    reply = api.post(path, content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 400 and "limit of 100 levels" in reply.json()["detail"]


@pytest.mark.parametrize(
    ("path", "limit", "name"),
    [
        ("/scheduler/filter", 32 * MIB, "extender"),
        ("/v1/dry-run", 8 * MIB, "dry-run"),
        ("/admission/validate/enforce", 4 * MIB, "admission review"),
    ],
)
def test_a_body_over_its_endpoints_cap_is_a_413_naming_the_cap(
    api: TestClient, path: str, limit: int, name: str
) -> None:
    reply = api.post(path, content=b" " * (limit + 1), headers={"Content-Type": "application/json"})
    assert reply.status_code == 413
    assert reply.json()["detail"] == f"{name} body of {limit + 1:,} bytes is over the {limit:,}-byte limit"


def test_a_yaml_alias_bomb_is_a_413_in_milliseconds(api: TestClient) -> None:
    reply = api.post("/v1/dry-run", content=alias_bomb(), headers={"Content-Type": "application/yaml"})
    assert reply.status_code == 413
    assert reply.json()["detail"] == "the document expands to more than 1,000,000 values (YAML aliases?)"


def test_a_yaml_document_that_contains_itself_is_a_400(api: TestClient) -> None:
    reply = api.post("/v1/dry-run", content=b"kind: Pod\nspec: &s {x: *s}\n")
    assert reply.status_code == 400 and "contains itself" in reply.json()["detail"]


def test_benign_yaml_anchors_still_read(api: TestClient) -> None:
    manifest = b"""
kind: Pod
metadata: {name: anchors, namespace: ml}
spec:
  containers:
    - &c {name: a, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}
    - <<: *c
      name: b
"""
    reply = api.post("/v1/dry-run", content=manifest, headers={"Content-Type": "application/yaml"})
    assert reply.status_code == 200 and reply.json()["request"].startswith("2 GPU")


def test_a_snapshot_node_over_the_gpu_cap_is_a_422_naming_node_and_cap(api: TestClient) -> None:
    body = json.dumps(
        {
            "manifest": {"kind": "Pod", "spec": {}},
            "snapshot": {"nodes": [{"name": "wide", "topology": topo_matrix(65)}]},
        }
    )
    reply = api.post("/v1/dry-run", content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 422
    assert reply.json()["detail"] == "snapshot: node 'wide' has 65 GPUs, over the limit of 64"


def test_a_snapshot_over_the_node_cap_is_a_422(api: TestClient) -> None:
    body = json.dumps({"manifest": {"kind": "Pod", "spec": {}}, "snapshot": {"nodes": [{"name": "n"}] * 5_001}})
    reply = api.post("/v1/dry-run", content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 422
    assert reply.json()["detail"] == "snapshot: 5,001 entries is over the limit of 5,000 nodes"


def test_a_dry_run_past_its_time_budget_is_stopped_and_the_next_one_is_answered(advisor: Advisor) -> None:
    edge = Edge(advisor, limits=Limits(dry_run_seconds=1.0))
    with TestClient(build_app(edge, "all")) as client:
        # Thousands of topology matrices to parse and nodes to judge, none alike: well past one second.
        slow = client.post("/v1/dry-run", content=max_size_body(), headers={"Content-Type": "application/json"})
        assert slow.status_code == 422 and slow.json()["detail"] == "took longer than the 1 s budget of a dry-run"
        # A 40-GPU node is placed by the bounded method (exact search never finished there): well within it.
        wide = client.post("/v1/dry-run", content=big_snapshot(40), headers={"Content-Type": "application/json"})
        assert wide.status_code == 200, wide.text


def test_bodies_held_at_once_past_the_budget_are_a_503_with_retry_after(advisor: Advisor) -> None:
    edge = Edge(advisor, limits=Limits(bodies_in_flight=1000))
    edge.in_flight.held = 900  # as if another request's body were being held
    with TestClient(build_app(edge, "all")) as client:
        reply = client.post("/admission/validate", content=b"{" + b" " * 200 + b"}")
        assert reply.status_code == 503 and reply.headers["retry-after"] == "1"
        assert "request bodies (limit 0 MiB)" in reply.json()["detail"]
    assert edge.in_flight.held == 900, "a refused request holds nothing afterwards"


def test_node_names_past_the_cap_are_a_413(api: TestClient) -> None:
    body = json.dumps({"Pod": {"spec": {}}, "NodeNames": ["n"] * 20_001})
    reply = api.post("/scheduler/filter", content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 413 and "over the limit of 20000" in reply.json()["detail"]
