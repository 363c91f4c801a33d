"""The agent's own API client: the Node merge patch as the API server sees it, in a pod (token and CA)
and outside one (kubeconfig), against the HTTP fake API server, over TLS where credentials need it."""

from __future__ import annotations

import base64
import json
import ssl
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from extender.agent.apiserver import ApiTarget, NodeApi, NodeApiError, in_cluster_target, node_writer
from extender.agent.kubeconfig import KubeconfigError, NeedsKubernetesClient, kubeconfig_target
from extender.cluster.state import ANNOTATION_FREE_GPUS, ANNOTATION_TOPOLOGY
from tests.fakes.apiserver import FakeApiServer, node
from tests.kube.tls_pair import TlsFiles, tls_files

PATCH = {"metadata": {"annotations": {ANNOTATION_TOPOLOGY: '{"version":1}', ANNOTATION_FREE_GPUS: '{"free":[0]}'}}}


class TlsFakeApiServer(FakeApiServer):
    """The same fake behind TLS with the test CA's certificate for 127.0.0.1; optionally asks for a client one."""

    def __init__(self, tls: TlsFiles, client_certs: bool = False) -> None:
        super().__init__()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls.server_cert, tls.server_key)
        if client_certs:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(tls.ca)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._server.server_address[1]}"


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return tls_files(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def apiserver() -> Iterator[FakeApiServer]:
    with FakeApiServer() as fake:
        fake.put("nodes", node("gpu-1"))
        yield fake


@pytest.fixture
def tls_apiserver(tls: TlsFiles) -> Iterator[FakeApiServer]:
    with TlsFakeApiServer(tls) as fake:
        fake.put("nodes", node("gpu-1"))
        yield fake


def service_account(folder: Path, tls: TlsFiles, token: str = "sa-token-1") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "token").write_text(token + "\n")
    (folder / "ca.crt").write_bytes(tls.ca.read_bytes())
    return folder


def in_pod_env(fake: FakeApiServer) -> dict[str, str]:
    return {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(fake._server.server_address[1])}


def the_patch(fake: FakeApiServer) -> tuple[str, dict[str, str], dict[str, object]]:
    (request,) = [r for r in fake.requests if r[0] == "PATCH"]
    _, path, headers, body = request
    return path, {k.lower(): v for k, v in headers.items()}, json.loads(body)  # header names are case-blind


def test_the_patch_is_a_merge_patch_of_the_two_annotations_with_the_bearer_token(apiserver: FakeApiServer) -> None:
    NodeApi(ApiTarget(apiserver.url, bearer=lambda: "t0ken")).patch_node("gpu-1", PATCH)
    path, headers, body = the_patch(apiserver)
    assert path == "/api/v1/nodes/gpu-1"
    assert headers["content-type"] == "application/merge-patch+json"
    assert headers["authorization"] == "Bearer t0ken"
    assert headers["accept"] == "application/json"
    assert body == PATCH
    assert apiserver.objects["nodes"]["gpu-1"]["metadata"]["annotations"][ANNOTATION_FREE_GPUS] == '{"free":[0]}'


def test_in_a_pod_the_service_account_token_and_ca_are_used(tls_apiserver, tls, tmp_path) -> None:  # type: ignore[no-untyped-def]
    account = service_account(tmp_path / "sa", tls)
    target = in_cluster_target(in_pod_env(tls_apiserver), account)
    assert target is not None and target.url == tls_apiserver.url
    NodeApi(target).patch_node("gpu-1", PATCH)
    _, headers, body = the_patch(tls_apiserver)
    assert headers["authorization"] == "Bearer sa-token-1" and body == PATCH


def test_a_rotated_token_is_read_again_for_the_next_write(tls_apiserver, tls, tmp_path) -> None:  # type: ignore[no-untyped-def]
    account = service_account(tmp_path / "sa", tls)
    api = NodeApi(in_cluster_target(in_pod_env(tls_apiserver), account))  # type: ignore[arg-type]
    api.patch_node("gpu-1", PATCH)
    (account / "token").write_text("sa-token-2")  # the kubelet refreshes the projected token in place
    api.patch_node("gpu-1", PATCH)
    tokens = [h["Authorization"] for m, _, h, _ in tls_apiserver.requests if m == "PATCH"]
    assert tokens == ["Bearer sa-token-1", "Bearer sa-token-2"]


def test_a_server_the_cluster_ca_did_not_sign_is_refused(tls_apiserver, tmp_path) -> None:  # type: ignore[no-untyped-def]
    other_ca = tls_files(tmp_path / "other")
    account = service_account(tmp_path / "sa", other_ca)
    with pytest.raises(NodeApiError, match="CERTIFICATE_VERIFY_FAILED"):
        NodeApi(in_cluster_target(in_pod_env(tls_apiserver), account)).patch_node("gpu-1", PATCH)  # type: ignore[arg-type]
    assert not [r for r in tls_apiserver.requests if r[0] == "PATCH"]


@pytest.mark.parametrize(
    "drop",
    ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "token", "ca.crt", "empty token"],
)
def test_outside_a_pod_there_is_no_in_cluster_target(drop: str, tls: TlsFiles, tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    account = service_account(tmp_path / "sa", tls)
    assert in_cluster_target(env, account) is not None
    env.pop(drop, None)
    if drop == "empty token":
        (account / "token").write_text("\n")
    elif drop in ("token", "ca.crt"):
        (account / drop).unlink()
    assert in_cluster_target(env, account) is None


def test_an_ipv6_service_address_is_bracketed(tls: TlsFiles, tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    target = in_cluster_target(env, service_account(tmp_path / "sa", tls))
    assert target is not None and target.url == "https://[fd00::1]:443"


def test_a_refusal_is_one_line_with_the_servers_message(apiserver: FakeApiServer) -> None:
    apiserver.delete("nodes", "gpu-1")
    with pytest.raises(NodeApiError) as caught:
        NodeApi(ApiTarget(apiserver.url)).patch_node("gpu-1", PATCH)
    assert str(caught.value) == 'API server answered 404 Not Found: nodes "gpu-1" not found'


def test_no_server_at_the_address_is_one_line(apiserver: FakeApiServer) -> None:
    url = apiserver.url
    apiserver.__exit__(None, None, None)  # nothing listens there any more
    with pytest.raises(NodeApiError, match=r"^cannot reach the API server at http://127\.0\.0\.1:\d+: .*refused"):
        NodeApi(ApiTarget(url), timeout_s=2).patch_node("gpu-1", PATCH)


# -- outside a cluster: a kubeconfig ------------------------------------------------------------------


def kubeconfig(cluster: Mapping[str, object], user: Mapping[str, object]) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "k", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }


def as_yaml(doc: dict[str, object]) -> str:
    import yaml

    return yaml.safe_dump(doc)


def test_a_yaml_kubeconfig_with_a_token_file_and_a_relative_ca(tls_apiserver, tls, tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "ca.pem").write_bytes(tls.ca.read_bytes())
    (tmp_path / "token").write_text("file-token\n")
    path = tmp_path / "config"
    path.write_text(
        as_yaml(kubeconfig({"server": tls_apiserver.url, "certificate-authority": "ca.pem"}, {"tokenFile": "token"}))
    )
    NodeApi(kubeconfig_target(str(path))).patch_node("gpu-1", PATCH)
    assert the_patch(tls_apiserver)[1]["authorization"] == "Bearer file-token"


def test_inline_ca_and_client_certificate_data(tls, tmp_path) -> None:  # type: ignore[no-untyped-def]
    def data(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    with TlsFakeApiServer(tls, client_certs=True) as fake:
        fake.put("nodes", node("gpu-1"))
        cluster = {"server": fake.url, "certificate-authority-data": data(tls.ca)}
        user = {"client-certificate-data": data(tls.client_cert), "client-key-data": data(tls.client_key)}
        path = tmp_path / "config"
        path.write_text(json.dumps(kubeconfig(cluster, user)))
        NodeApi(kubeconfig_target(str(path))).patch_node("gpu-1", PATCH)
        _, headers, body = the_patch(fake)
    assert "authorization" not in headers and body == PATCH  # the client certificate is who we are


def test_insecure_skip_tls_verify_trusts_any_server(tls_apiserver, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "config"
    user = {"username": "admin", "password": "pw"}
    path.write_text(json.dumps(kubeconfig({"server": tls_apiserver.url, "insecure-skip-tls-verify": True}, user)))
    NodeApi(kubeconfig_target(str(path))).patch_node("gpu-1", PATCH)
    assert the_patch(tls_apiserver)[1]["authorization"] == "Basic " + base64.b64encode(b"admin:pw").decode()


def test_kubeconfig_files_merge_in_order_the_first_name_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = kubeconfig({"server": "http://127.0.0.1:1"}, {"token": "first"})
    second = kubeconfig({"server": "http://127.0.0.1:2"}, {"token": "second"})
    second["current-context"] = "other"
    (tmp_path / "a").write_text(json.dumps({k: v for k, v in first.items() if k != "clusters"}))
    (tmp_path / "b").write_text(json.dumps(second))
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing'}:{tmp_path / 'a'}:{tmp_path / 'b'}")
    target = kubeconfig_target()
    assert target.url == "http://127.0.0.1:2", "the only cluster named k is in the second file"
    assert target.bearer is not None and target.bearer() == "first", "user u: the first file's"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"current-context": ""}, "no current-context"),
        ({**kubeconfig({"server": "http://127.0.0.1:1"}, {}), "current-context": "nope"}, "context 'nope'"),
        (kubeconfig({}, {}), "cluster 'k' has no server"),
    ],
)
def test_a_kubeconfig_that_does_not_say_where_is_a_clear_error(doc, message, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "config"
    path.write_text(json.dumps(doc))
    with pytest.raises(KubeconfigError, match=message):
        kubeconfig_target(str(path))


def test_a_missing_or_unreadable_kubeconfig_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match=r"no kubeconfig at .*/nowhere"):
        kubeconfig_target(str(tmp_path / "nowhere"))
    (tmp_path / "bad").write_text("clusters: [unclosed")
    with pytest.raises(KubeconfigError, match="is not YAML"):
        kubeconfig_target(str(tmp_path / "bad"))


@pytest.mark.parametrize(
    ("cluster", "user"),
    [
        ({}, {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "aws"}}),
        ({}, {"auth-provider": {"name": "oidc"}}),
        ({"tls-server-name": "kubernetes"}, {"token": "t"}),
    ],
)
def test_credentials_only_the_kubernetes_client_speaks_are_handed_to_it(cluster, user, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "config"
    path.write_text(json.dumps(kubeconfig({"server": "https://127.0.0.1:1", **cluster}, user)))
    with pytest.raises(NeedsKubernetesClient):
        kubeconfig_target(str(path))


def test_an_exec_plugin_kubeconfig_writes_through_the_kubernetes_client(apiserver, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import sys

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": "ex"}}
    plugin = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": sys.executable,
        "args": ["-c", f"print({json.dumps(json.dumps(credential))})"],
        "interactiveMode": "Never",
    }
    path = tmp_path / "config"
    path.write_text(json.dumps(kubeconfig({"server": apiserver.url}, {"exec": plugin})))
    node_writer(str(path)).patch_node("gpu-1", PATCH)
    _, headers, body = the_patch(apiserver)
    assert headers["authorization"] == "Bearer ex" and headers["content-type"] == "application/merge-patch+json"
    assert body == PATCH


def test_the_agent_command_without_credentials_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from gpu_advisor.cli import main

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    code = main(["agent", "--node", "gpu-1", "--kubeconfig", str(tmp_path / "nowhere")])
    err = capsys.readouterr().err
    assert code == 2 and "cannot reach the API server: no kubeconfig at" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
