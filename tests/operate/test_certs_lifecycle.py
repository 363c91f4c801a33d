"""Webhook certificates over their life: a CA is never replaced by accident, expiry is reported, and the
in-cluster Job keeps a Secret renewed and the caBundle injected."""

from __future__ import annotations

import base64
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from gpu_advisor.cli import main
from tests.fakes.apiserver import FakeApiServer
from tests.kube.test_kube_source import kubeconfig
from webhook.cert_secret import plan
from webhook.certs import create_certs, issue

NOW = dt.datetime(2026, 12, 2, 11, 7, tzinfo=dt.UTC)
SECRET = "/api/v1/namespaces/gpu-advisor/secrets/gpu-advisor-tls"


def create(out: Path, *extra: str) -> int:
    return main(["certs", "create", "--out", str(out), *extra])


def test_creating_again_refuses_to_replace_the_ca(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert create(tmp_path) == 0
    ca = (tmp_path / "ca.crt").read_bytes()
    assert create(tmp_path) == 2
    assert "already holds a CA: renew with --reuse-ca" in capsys.readouterr().err
    assert (tmp_path / "ca.crt").read_bytes() == ca


def test_force_replaces_the_ca(tmp_path: Path) -> None:
    assert create(tmp_path) == 0
    ca = (tmp_path / "ca.crt").read_bytes()
    assert create(tmp_path, "--force") == 0
    assert (tmp_path / "ca.crt").read_bytes() != ca


def test_reuse_ca_with_no_ca_is_refused_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert create(tmp_path / "empty", "--reuse-ca") == 2
    assert "--reuse-ca: no CA in" in capsys.readouterr().err
    assert not (tmp_path / "empty").exists()


def test_check_reports_each_expiry_and_passes_while_none_is_due(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create_certs("gpu-advisor", "gpu-advisor", tmp_path)
    assert main(["certs", "check", str(tmp_path)]) == 0
    ca, tls, client = capsys.readouterr().out.splitlines()
    # CA 5 × 365 = 1825 days, serving and client 365 days, all counted from a moment ago: a day short of each.
    assert ca.startswith("ca.crt  CN=gpu-advisor CA (gpu-advisor)  expires ") and ca.endswith("(in 1824 days)")
    assert tls.startswith("tls.crt  CN=gpu-advisor.gpu-advisor.svc  expires ") and tls.endswith("(in 364 days)")
    assert client.startswith("scheduler.crt  CN=gpu-advisor-scheduler  expires ") and client.endswith("(in 364 days)")


def test_check_exits_1_inside_the_renewal_window_and_says_how_to_renew(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create_certs("gpu-advisor", "gpu-advisor", tmp_path)
    assert main(["certs", "check", str(tmp_path), "--within", "400"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"due for renewal (within 400 days): gpu-advisor certs create --reuse-ca --out {tmp_path}"
    )


def test_check_says_expired(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    create_certs("svc", "ns", tmp_path, now=dt.datetime.now(dt.UTC) - dt.timedelta(days=400))
    assert main(["certs", "check", str(tmp_path)]) == 1
    assert "(EXPIRED 35 days ago)" in capsys.readouterr().out  # 400 - 365 = 35


def stored(now: dt.datetime, service: str = "gpu-advisor", client: bool = True) -> dict[str, bytes]:
    """A Secret's PEMs as a run at ``now`` left them; ``client=False``: as a release before kube-scheduler's
    client certificate left them (an upgrade)."""
    pems = issue(service, "gpu-advisor", None, now)
    found = {"ca_cert": pems.ca_cert, "ca_key": pems.ca_key, "cert": pems.cert, "key": pems.key}
    return found | ({"client_cert": pems.client_cert, "client_key": pems.client_key} if client else {})


@pytest.mark.parametrize(
    ("issued", "service", "changed", "same_ca", "why"),
    [
        (None, "gpu-advisor", True, False, "created a CA and a serving certificate"),
        (NOW - dt.timedelta(days=10), "gpu-advisor", False, True, "nothing due: tls.crt"),
        # 365 - 340 = 25 days left, inside the 30-day window: the serving pair is renewed, the CA kept
        (NOW - dt.timedelta(days=340), "gpu-advisor", True, True, "renewed the serving and client certificates: "),
        (
            NOW - dt.timedelta(days=10),
            "other-name",
            True,
            True,
            "renewed the serving and client certificates: the serving",
        ),
        # 1825 - 1800 = 25 days left on the CA itself: a new CA
        (NOW - dt.timedelta(days=1800), "gpu-advisor", True, False, "replaced the CA, which is due"),
    ],
    ids=["empty", "fresh", "serving due", "another service", "ca due"],
)
def test_the_job_renews_what_is_due_and_nothing_else(
    issued: dt.datetime | None, service: str, changed: bool, same_ca: bool, why: str
) -> None:
    before = stored(issued, service) if issued else {}
    decided = plan(before, "gpu-advisor", "gpu-advisor", NOW)
    assert decided.changed is changed and decided.why.startswith(why)
    if before:
        assert (decided.pems.ca_cert == before["ca_cert"]) is same_ca
        assert (decided.pems.cert == before["cert"]) is not changed
    cert = x509.load_pem_x509_certificate(decided.pems.cert)
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(decided.pems.ca_cert))
    assert cert.not_valid_after_utc - NOW > dt.timedelta(days=30)


def webhook_configs(fake: FakeApiServer) -> None:
    for kind in ("mutating", "validating"):
        fake.documents[f"/apis/admissionregistration.k8s.io/v1/{kind}webhookconfigurations/gpu-advisor"] = {
            "metadata": {"name": "gpu-advisor"},
            "webhooks": [{"name": f"{kind}.gpu-advisor.io", "clientConfig": {"service": {"name": "gpu-advisor"}}}],
        }


def ensure(tmp_path: Path, fake: FakeApiServer) -> int:
    return main(["certs", "ensure", "--kubeconfig", kubeconfig(tmp_path, fake.url)])


def bundles(fake: FakeApiServer) -> set[str]:
    return {
        w["clientConfig"].get("caBundle", "")
        for path, doc in fake.documents.items()
        if "webhookconfigurations" in path
        for w in doc["webhooks"]
    }


def secret_data(fake: FakeApiServer) -> dict[str, Any]:
    data: dict[str, Any] = fake.documents[SECRET]["data"]
    return data


def test_ensure_creates_the_secret_then_leaves_it_alone_and_always_injects_the_ca(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeApiServer() as fake:
        webhook_configs(fake)
        assert ensure(tmp_path, fake) == 0
        assert fake.documents[SECRET]["type"] == "kubernetes.io/tls"
        assert sorted(secret_data(fake)) == ["ca.crt", "ca.key", "scheduler.crt", "scheduler.key", "tls.crt", "tls.key"]
        assert bundles(fake) == {secret_data(fake)["ca.crt"]}, "the caBundle is the Secret's CA"
        first = dict(secret_data(fake))
        for doc in fake.documents.values():  # a re-applied configuration loses its caBundle
            for hook in doc.get("webhooks", []):
                hook["clientConfig"].pop("caBundle")
        assert ensure(tmp_path, fake) == 0
        assert secret_data(fake) == first and not [r for r in fake.requests if r[0] == "PUT"]
        assert bundles(fake) == {first["ca.crt"]}
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "secret gpu-advisor/gpu-advisor-tls: created a CA and a serving certificate"
    assert out[1] == out[3] == "caBundle set on mutating/gpu-advisor, validating/gpu-advisor"
    assert out[2].startswith("secret gpu-advisor/gpu-advisor-tls: nothing due: tls.crt  CN=gpu-advisor.gpu-advisor.svc")


def test_ensure_renews_a_due_serving_certificate_against_the_same_ca(tmp_path: Path) -> None:
    old = stored(dt.datetime.now(dt.UTC) - dt.timedelta(days=340))
    with FakeApiServer() as fake:
        webhook_configs(fake)
        fake.documents[SECRET] = {
            "metadata": {"name": "gpu-advisor-tls", "namespace": "gpu-advisor", "resourceVersion": "7"},
            "data": {
                name: base64.b64encode(old[field]).decode()
                for field, name in [
                    ("ca_cert", "ca.crt"),
                    ("ca_key", "ca.key"),
                    ("cert", "tls.crt"),
                    ("key", "tls.key"),
                ]
            },
        }
        assert ensure(tmp_path, fake) == 0
        data = secret_data(fake)
    assert base64.b64decode(data["ca.crt"]) == old["ca_cert"] and base64.b64decode(data["tls.crt"]) != old["cert"]
    renewed = x509.load_pem_x509_certificate(base64.b64decode(data["tls.crt"]))
    assert renewed.not_valid_after_utc - dt.datetime.now(dt.UTC) > dt.timedelta(days=364)


def test_ensure_without_webhook_configurations_fails_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeApiServer() as fake:
        assert ensure(tmp_path, fake) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.endswith("but no Mutating or Validating webhook configuration is named gpu-advisor")


def test_an_upgraded_secret_without_kube_schedulers_client_pair_gets_one_from_the_same_ca() -> None:
    before = stored(NOW - dt.timedelta(days=10), client=False)
    decided = plan(before, "gpu-advisor", "gpu-advisor", NOW)
    assert decided.changed and decided.why == (
        "renewed the serving and client certificates: no client certificate for kube-scheduler"
    )
    assert decided.pems.ca_cert == before["ca_cert"]  # every injected caBundle stays valid
    client = x509.load_pem_x509_certificate(decided.pems.client_cert)
    client.verify_directly_issued_by(x509.load_pem_x509_certificate(decided.pems.ca_cert))
    usage = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]
