"""Under ``serve --api-auth`` the console's data needs a bearer token the API server vouches for
(TokenReview), and under ``--api-access-review`` an RBAC grant of the path too (SubjectAccessReview of
a non-resource URL, the kube-rbac-proxy way), both asked of an HTTP-level fake on 127.0.0.1. The page
and its assets hold no data and load without one, so the page can ask for the token."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.http.advisor import Advisor
from extender.http.auth import TokenCheck, kube_access_review, kube_token_review
from gpu_advisor.app import Edge, create_apps
from tests.hostile.test_ports_and_auth import FakeTokenReviews
from tests.kube.test_kube_source import kubeconfig


@pytest.fixture
def guarded(advisor: Advisor, tmp_path: Path) -> Iterator[tuple[TestClient, FakeTokenReviews]]:
    fake = FakeTokenReviews({"viewer": ("system:serviceaccount:ops:console", ["system:serviceaccounts"])})
    check = TokenCheck(kube_token_review(kubeconfig(tmp_path, fake.url)), ("system:serviceaccounts",))
    plain, _ = create_apps(Edge(advisor, auth=check))
    try:
        with TestClient(plain) as client:
            yield client, fake
    finally:
        fake.close()


@pytest.mark.parametrize("path", ["/v1/console/cluster", "/v1/console/nodes/dgx1-v100-a", "/v1/console/pending"])
def test_the_console_data_needs_a_token_the_api_server_accepts(
    guarded: tuple[TestClient, FakeTokenReviews], path: str
) -> None:
    client, fake = guarded
    refused = client.get(path)
    assert refused.status_code == 401 and "Bearer" in refused.json()["detail"]
    assert client.get(path, headers={"Authorization": "Bearer forged"}).status_code == 401
    assert client.get(path, headers={"Authorization": "Bearer viewer"}).status_code == 200
    assert fake.reviews == 2  # forged and viewer; the request without a token never reached the API server


@pytest.mark.parametrize("path", ["/", "/nodes/dgx1-v100-a", "/console/console.js", "/docs"])
def test_the_page_and_its_assets_load_without_a_token(guarded: tuple[TestClient, FakeTokenReviews], path: str) -> None:
    client, fake = guarded
    assert client.get(path).status_code == 200 and fake.reviews == 0


class FakeApiServer:
    """TokenReview and SubjectAccessReview: ``users`` maps a token to a user, ``grants`` a user to the
    non-resource URL patterns (``/v1/console/*``) RBAC lets them ``get``."""

    def __init__(self, users: dict[str, str], grants: dict[str, list[str]]) -> None:
        self.asked: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.asked.append({"path": self.path, "spec": body["spec"]})
                spec = body["spec"]
                if self.path.endswith("/tokenreviews"):
                    user = users.get(spec["token"])
                    body["status"] = {"authenticated": user is not None}
                    if user:
                        body["status"]["user"] = {"username": user, "groups": ["system:authenticated"]}
                else:
                    attrs = spec["nonResourceAttributes"]
                    allowed = attrs["verb"] == "get" and any(
                        attrs["path"] == g or (g.endswith("*") and attrs["path"].startswith(g[:-1]))
                        for g in grants.get(spec["user"], [])
                    )
                    body["status"] = {"allowed": allowed}
                data = json.dumps(body).encode()
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
def reviewed(advisor: Advisor, tmp_path: Path) -> Iterator[tuple[TestClient, FakeApiServer]]:
    fake = FakeApiServer({"viewer": "ops:viewer", "outsider": "jane"}, {"ops:viewer": ["/v1/console/*"]})
    config = kubeconfig(tmp_path, fake.url)
    check = TokenCheck(kube_token_review(config), (), access=kube_access_review(config))
    plain, _ = create_apps(Edge(advisor, auth=check))
    try:
        with TestClient(plain) as client:
            yield client, fake
    finally:
        fake.close()


@pytest.mark.parametrize(
    ("token", "path", "status", "detail"),
    [
        ("viewer", "/v1/console/cluster", 200, None),
        ("viewer", "/v1/nodes", 403, "user 'ops:viewer' may not get /v1/nodes: no RBAC rule grants it"),
        ("outsider", "/v1/console/cluster", 403, "user 'jane' may not get /v1/console/cluster: no RBAC rule"),
        ("forged", "/v1/console/cluster", 401, "the API server does not accept this bearer token"),
    ],
    ids=["granted", "other-path", "no-grant", "unknown-token"],
)
def test_an_access_review_grants_paths_not_groups(
    reviewed: tuple[TestClient, FakeApiServer], token: str, path: str, status: int, detail: str | None
) -> None:
    client, _ = reviewed
    reply = client.get(path, headers={"Authorization": f"Bearer {token}"})
    assert reply.status_code == status
    assert detail is None or reply.json()["detail"].startswith(detail)


def test_the_access_review_names_the_user_path_and_verb_and_is_cached(
    reviewed: tuple[TestClient, FakeApiServer],
) -> None:
    client, fake = reviewed
    for _ in range(3):
        assert client.get("/v1/console/pending", headers={"Authorization": "Bearer viewer"}).status_code == 200
    assert [a["path"].rsplit("/", 1)[1] for a in fake.asked] == ["tokenreviews", "subjectaccessreviews"]
    assert fake.asked[1]["spec"]["user"] == "ops:viewer"
    assert fake.asked[1]["spec"]["nonResourceAttributes"] == {"path": "/v1/console/pending", "verb": "get"}
