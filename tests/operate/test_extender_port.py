"""Only kube-scheduler can call the extender verbs: with ``--scheduler-client-ca`` they are served on their own
HTTPS port to a client certificate that CA signed for client authentication, and nowhere else. Through a
real ``gpu-advisor serve`` process, as ``certs create`` and ``scheduler-config`` set it up."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.hostile import free_port, post, served
from webhook.certs import CertFiles, create_certs

FILTER = json.dumps({"Pod": {"metadata": {"name": "p"}, "spec": {}}, "NodeNames": ["l40s-a"]}).encode()
SERVER_NAME = "gpu-advisor.gpu-advisor.svc"  # what the printed tlsConfig checks the advisor's certificate against


def call(port: int, files: CertFiles, pair: tuple[Path, Path] | None) -> tuple[int, bytes]:
    """POST /scheduler/filter as kube-scheduler's client does: the advisor's certificate checked against
    ca.crt for the Service's name (the printed tlsConfig's serverName), with ``pair`` as its own."""
    context = ssl.create_default_context(cafile=str(files.ca_cert))
    if pair is not None:
        context.load_cert_chain(*pair)
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.sock = context.wrap_socket(raw, server_hostname=SERVER_NAME)
        conn.request("POST", "/scheduler/filter", body=FILTER, headers={"Content-Type": "application/json"})
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        raw.close()
        conn.close()


@pytest.fixture
def files(tmp_path: Path) -> CertFiles:
    return create_certs("gpu-advisor", "gpu-advisor", tmp_path / "tls")


def test_the_verbs_answer_kube_schedulers_certificate_and_no_one_else(files: CertFiles) -> None:
    extender = free_port()
    flags = ["--tls-cert", str(files.cert), "--tls-key", str(files.key), "--tls-port", str(free_port())]
    flags += ["--scheduler-client-ca", str(files.ca_cert), "--scheduler-port", str(extender)]
    with served(*flags) as (port, _, _):
        status, body = call(extender, files, (files.client_cert, files.client_key))
        assert status == 200 and json.loads(body)["NodeNames"] == ["l40s-a"]
        # No certificate, or the advisor's own serving certificate (server auth only): the handshake fails.
        for pair in (None, (files.cert, files.key)):
            with pytest.raises((ssl.SSLError, ConnectionError)):  # TLS 1.3: refused after the client's Finished
                call(extender, files, pair)
        # A certificate of another CA, for client authentication: refused too.
        other = create_certs("gpu-advisor", "gpu-advisor", files.ca_cert.parent.parent / "other")
        with pytest.raises((ssl.SSLError, ConnectionError)):
            call(extender, files, (other.client_cert, other.client_key))
        # The plain port serves no verb: a 404 that says where they are, and nothing judged.
        status, body = post(port, "/scheduler/bind", b"{}")
        assert status == 404 and "extender port" in json.loads(body)["detail"]


def test_a_live_cluster_is_refused_without_a_client_ca_unless_the_operator_says_so(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "gpu_advisor.cli", "serve", "--cluster", "kube", "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("gpu-advisor: error: --cluster kube: the extender verbs bind pods")
    assert "--scheduler-client-ca" in line and "--insecure-scheduler-verbs" in line
