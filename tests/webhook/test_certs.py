"""Webhook TLS: the certificates, their renewal under a live server, and the CA bundle injection."""

from __future__ import annotations

import base64
import datetime as dt
import socket
import ssl
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from gpu_advisor.cli import main
from tests.fakes.apiserver import FakeApiServer
from tests.kube.test_kube_source import kubeconfig
from webhook.certs import CertReloader, create_certs


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_the_serving_certificate_names_the_service_and_chains_to_the_ca(tmp_path: Path) -> None:
    now = dt.datetime(2026, 12, 2, tzinfo=dt.UTC)
    files = create_certs("gpu-advisor", "gpu-advisor", tmp_path, now=now)
    ca, cert = load(files.ca_cert), load(files.cert)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert sans == [
        "gpu-advisor",
        "gpu-advisor.gpu-advisor",
        "gpu-advisor.gpu-advisor.svc",
        "gpu-advisor.gpu-advisor.svc.cluster.local",
    ]
    assert cert.issuer == ca.subject
    ca_key = ca.public_key()
    assert isinstance(ca_key, ec.EllipticCurvePublicKey)
    cert.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert (cert.not_valid_after_utc - now).days == 365 and (ca.not_valid_after_utc - now).days == 5 * 365
    assert files.key.stat().st_mode & 0o777 == 0o600


def test_renewal_can_keep_the_ca(tmp_path: Path) -> None:
    first = create_certs("svc", "ns", tmp_path)
    ca_before, cert_before = first.ca_cert.read_bytes(), load(first.cert).serial_number
    again = create_certs("svc", "ns", tmp_path, reuse_ca=True)
    assert again.ca_cert.read_bytes() == ca_before and load(again.cert).serial_number != cert_before
    load(again.cert).verify_directly_issued_by(load(again.ca_cert))


def handshake_serial(port: int, ca: Path) -> int:
    client = ssl.create_default_context(cafile=str(ca))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        client.wrap_socket(raw, server_hostname="svc.ns.svc") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def test_a_renewed_certificate_is_served_without_a_restart(tmp_path: Path) -> None:
    files = create_certs("svc", "ns", tmp_path)
    reloader = CertReloader(files.cert, files.key, interval_s=3600)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                with reloader.context.wrap_socket(conn, server_side=True):
                    pass
            except (ssl.SSLError, OSError):
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        original = load(files.cert).serial_number
        before = handshake_serial(port, files.ca_cert)
        renewed = create_certs("svc", "ns", tmp_path, reuse_ca=True)
        assert reloader.reload() is True and reloader.reload() is False
        after = handshake_serial(port, renewed.ca_cert)
        assert before == original
        assert after == load(renewed.cert).serial_number and after != before
    finally:
        stop.set()
        listener.close()


def test_a_broken_renewal_keeps_serving_the_previous_certificate(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    files = create_certs("svc", "ns", tmp_path)
    reloader = CertReloader(files.cert, files.key)
    files.cert.write_text("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
    assert reloader.reload() is False and "still serving the previous one" in caplog.text


def test_certs_create_and_inject_set_the_ca_bundle_on_both_webhook_configurations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["certs", "create", "--service", "gpu-advisor", "--namespace", "gpu-advisor", "--out", str(tmp_path)]) == 0
    )
    with FakeApiServer() as fake:
        for kind in ("mutating", "validating"):
            fake.documents[f"/apis/admissionregistration.k8s.io/v1/{kind}webhookconfigurations/gpu-advisor"] = {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": f"{kind.title()}WebhookConfiguration",
                "metadata": {"name": "gpu-advisor"},
                "webhooks": [
                    {
                        "name": f"{kind}-{i}.gpu-advisor.io",
                        "clientConfig": {
                            "service": {
                                "name": "gpu-advisor",
                                "namespace": "gpu-advisor",
                                "path": "/admission/validate",
                            }
                        },
                        "sideEffects": "None",
                        "admissionReviewVersions": ["v1"],
                    }
                    for i in range(2)
                ],
            }
        assert (
            main(
                [
                    "certs",
                    "inject",
                    "--config",
                    "gpu-advisor",
                    "--ca",
                    str(tmp_path / "ca.crt"),
                    "--kubeconfig",
                    kubeconfig(tmp_path, fake.url),
                ]
            )
            == 0
        )
        expected = base64.b64encode((tmp_path / "ca.crt").read_bytes()).decode()
        for doc in fake.documents.values():
            assert [w["clientConfig"]["caBundle"] for w in doc["webhooks"]] == [expected, expected]
    assert "caBundle set on mutating/gpu-advisor, validating/gpu-advisor" in capsys.readouterr().out


def test_injecting_something_that_is_not_a_certificate_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bogus = tmp_path / "ca.crt"
    bogus.write_text("hello")
    assert main(["certs", "inject", "--ca", str(bogus)]) == 2
    assert "not a readable PEM certificate" in capsys.readouterr().err
