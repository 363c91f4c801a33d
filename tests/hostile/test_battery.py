"""The bad-input battery: schemathesis over the app's own OpenAPI document, and hypothesis over the
hostile classes (nesting, alias bombs, arbitrary JSON where objects go, poison annotations) on every
POST endpoint. No reply is ≥ 500 and nothing logs a traceback; a review with a uid always gets an
AdmissionReview echoing it."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.hostile import alias_bomb
from extender.http.advisor import Advisor
from extender.scoring import ScoringPolicy
from extender.sources.snapshot import simulated_cluster
from gpu_advisor.app import create_app
from tests.conftest import NOW
from tests.hostile.test_bounded_requests import POSTS

ADVISOR = Advisor(
    state=simulated_cluster(now=NOW).cluster("simulated"), telemetry=None, policy=ScoringPolicy(), clock=lambda: NOW
)
APP = create_app(ADVISOR)
SCHEMA = schemathesis.openapi.from_asgi("/openapi.json", APP)
FAST = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None)


class Tracebacks(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or "Traceback" in record.getMessage():
            self.records.append(record)


@pytest.fixture(scope="module")
def tracebacks() -> Iterator[Tracebacks]:
    handler = Tracebacks()
    logging.getLogger().addHandler(handler)
    yield handler
    logging.getLogger().removeHandler(handler)
    assert not handler.records, [r.getMessage() for r in handler.records]


@pytest.fixture(scope="module")
def client(tracebacks: Tracebacks) -> Iterator[TestClient]:
    with TestClient(APP, raise_server_exceptions=False) as c:
        yield c


@SCHEMA.parametrize()
@FAST
def test_no_generated_request_gets_a_5xx(case: Any, tracebacks: Tracebacks) -> None:
    reply = case.call()
    assert reply.status_code < 500, (case.method, case.path, reply.text[:300])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


def nested(depth: int, opener: str) -> bytes:
    closer = {"[": "]", "{": "}"}[opener]
    inner = '{"a":' if opener == "{" else "["
    return (inner * depth + "1" + closer * depth).encode()


@given(path=st.sampled_from(POSTS), depth=st.integers(50, 5_000), opener=st.sampled_from("[{"))
@FAST
def test_nesting_of_any_depth_is_never_a_5xx(client: TestClient, path: str, depth: int, opener: str) -> None:
    assert client.post(path, content=nested(depth, opener)).status_code < 500


@given(path=st.sampled_from(POSTS), levels=st.integers(2, 12))
@FAST
def test_alias_bombs_of_any_size_are_never_a_5xx(client: TestClient, path: str, levels: int) -> None:
    assert client.post(path, content=alias_bomb(levels), headers={"Content-Type": "application/yaml"}).status_code < 500


@given(path=st.sampled_from(POSTS), doc=json_values)
@FAST
def test_arbitrary_json_is_never_a_5xx(client: TestClient, path: str, doc: Any) -> None:
    assert client.post(path, content=json.dumps(doc)).status_code < 500


def pod(meta: Any, containers: Any, annotation: Any) -> dict[str, Any]:
    if isinstance(meta, dict):
        meta = {**meta, "annotations": {"gpu-advisor.io/gpu-memory": annotation}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": containers}}


pods = st.builds(
    pod,
    meta=json_values,
    containers=st.lists(json_values | st.just({"resources": {"limits": {"nvidia.com/gpu": "1"}}}), max_size=3),
    annotation=st.text(max_size=30) | st.sampled_from(["9" * 400 + "Gi", "NaNGi", "infGi", "1e400Mi", "-4Gi"]),
)


@given(obj=pods, endpoint=st.sampled_from([p for p in POSTS if p.startswith("/admission/")]))
@FAST
def test_a_review_with_a_uid_always_gets_an_admission_review_back(client: TestClient, obj: Any, endpoint: str) -> None:
    doc = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "u-1", "kind": {"kind": "Pod"}, "operation": "CREATE", "object": obj},
    }
    reply = client.post(endpoint, json=doc)
    assert reply.status_code == 200 and reply.json()["response"]["uid"] == "u-1"


@given(obj=pods, verb=st.sampled_from(["filter", "prioritize"]))
@FAST
def test_any_pod_sent_to_the_extender_is_never_a_5xx(client: TestClient, obj: Any, verb: str) -> None:
    body = {"Pod": obj, "NodeNames": ["l40s-a", "hgx-h100-a"]}
    assert client.post(f"/scheduler/{verb}", json=body).status_code < 500


@given(obj=pods)
@FAST
def test_any_pod_sent_to_the_dry_run_is_never_a_5xx(client: TestClient, obj: Any) -> None:
    assert client.post("/v1/dry-run", json=obj).status_code < 500


def test_the_openapi_document_names_every_body_and_error_reply() -> None:
    paths = APP.openapi()["paths"]
    for path, operations in paths.items():
        for method, operation in operations.items():
            replies = set(operation["responses"])
            if method == "post":
                assert "requestBody" in operation, path
                assert {"400", "413"} <= replies, (path, replies)
            if path.startswith("/v1/"):
                assert {"401", "403"} <= replies, (path, replies)
    assert "422" in paths["/v1/dry-run"]["post"]["responses"]
