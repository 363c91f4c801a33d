"""Each port answers only its own routes, and /v1 can ask for a bearer token that the API server
vouches for (TokenReview against an HTTP-level fake on 127.0.0.1)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from extender.http.advisor import Advisor
from extender.http.auth import TokenCheck, kube_token_review
from gpu_advisor.app import Edge, create_apps
from tests.kube.test_kube_source import kubeconfig

REVIEW = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u"}}
FILTER = {"Pod": {"spec": {}}, "NodeNames": ["l40s-a"]}


@pytest.fixture
def ports(advisor: Advisor) -> Iterator[tuple[TestClient, TestClient]]:
    plain, tls = create_apps(Edge(advisor))
    with TestClient(plain) as p, TestClient(tls) as t:
        yield p, t


@pytest.mark.parametrize("path", ["/admission/mutate", "/admission/validate", "/admission/validate/enforce"])
def test_the_plain_port_does_not_answer_admission(ports: tuple[TestClient, TestClient], path: str) -> None:
    plain, tls = ports
    assert plain.post(path, json=REVIEW).status_code == 404
    assert tls.post(path, json=REVIEW).status_code == 200


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/scheduler/filter"), ("POST", "/scheduler/prioritize"), ("POST", "/v1/dry-run"), ("GET", "/v1/nodes")],
)
def test_the_tls_port_does_not_answer_the_extender_or_v1(
    ports: tuple[TestClient, TestClient], method: str, path: str
) -> None:
    plain, tls = ports
    assert tls.request(method, path, json=FILTER).status_code == 404
    assert plain.request(method, path, json=FILTER).status_code != 404


def test_both_ports_answer_health(ports: tuple[TestClient, TestClient]) -> None:
    for client in ports:
        assert client.get("/healthz").status_code == 200 and client.get("/readyz").status_code == 200
    assert ports[0].get("/metrics").status_code == 200


class FakeTokenReviews:
    """kube-apiserver's TokenReview endpoint: ``tokens`` maps a token to (username, groups)."""

    def __init__(self, tokens: dict[str, tuple[str, list[str]]]) -> None:
        self.tokens, self.reviews = tokens, 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.reviews += 1
                who = fake.tokens.get(body["spec"]["token"])
                status = (
                    {"authenticated": True, "user": {"username": who[0], "groups": who[1]}}
                    if who
                    else {"authenticated": False, "error": "invalid bearer token"}
                )
                doc = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": body["spec"]}
                doc["status"] = status
                data = json.dumps(doc).encode()
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def authed(advisor: Advisor, tmp_path: Path) -> Iterator[tuple[TestClient, FakeTokenReviews]]:
    fake = FakeTokenReviews(
        {
            "good": ("system:serviceaccount:ci:dry-run", ["system:serviceaccounts", "system:authenticated"]),
            "outsider": ("jane", ["system:authenticated"]),
        }
    )
    check = TokenCheck(kube_token_review(kubeconfig(tmp_path, fake.url)), ("system:serviceaccounts",))
    plain, _ = create_apps(Edge(advisor, auth=check))
    try:
        with TestClient(plain) as client:
            yield client, fake
    finally:
        fake.close()


@pytest.mark.parametrize(
    ("header", "status", "detail"),
    [
        (None, 401, "/v1 needs 'Authorization: Bearer <token>' (a ServiceAccount or user token)"),
        ("Basic Zm9vOmJhcg==", 401, "/v1 needs 'Authorization: Bearer <token>' (a ServiceAccount or user token)"),
        ("Bearer forged", 401, "the API server does not accept this bearer token"),
        ("Bearer outsider", 403, "user 'jane' is in none of the groups allowed to use /v1: system:serviceaccounts"),
    ],
    ids=["no-token", "basic", "unknown-token", "wrong-group"],
)
def test_v1_without_an_accepted_token_is_401_or_403_with_a_message(
    authed: tuple[TestClient, FakeTokenReviews], header: str | None, status: int, detail: str
) -> None:
    client, _ = authed
    headers = {"Authorization": header} if header else {}
    for reply in (client.get("/v1/nodes", headers=headers), client.post("/v1/dry-run", content=b"x", headers=headers)):
        assert (reply.status_code, reply.json()["detail"]) == (status, detail)
    if status == 401:
        assert reply.headers["www-authenticate"] == 'Bearer realm="gpu-advisor"'


def test_an_accepted_token_reaches_v1_and_its_review_is_cached(authed: tuple[TestClient, FakeTokenReviews]) -> None:
    client, fake = authed
    for _ in range(3):
        assert client.get("/v1/nodes", headers={"Authorization": "Bearer good"}).status_code == 200
    assert fake.reviews == 1


def test_the_extender_and_health_need_no_token(authed: tuple[TestClient, FakeTokenReviews]) -> None:
    client, fake = authed
    assert client.post("/scheduler/filter", json=FILTER).status_code == 200
    assert client.get("/healthz").status_code == 200 and fake.reviews == 0
