"""Certificates kept in a Secret, for the in-cluster Job and CronJob (``gpu-advisor certs ensure``).

Each run reads the Secret, decides what is due (``plan``: pure), writes the Secret only when something
changed, and sets the caBundle on the webhook configurations every time (a re-applied configuration
has lost it). The serving pair is renewed against the same CA inside the renewal window; the CA itself
(5 years) only when it is inside the window too, and its new bundle is injected in the same run.
The advisor mounts only tls.crt and tls.key from the Secret and reloads them as the kubelet updates it.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature

from webhook.cert_expiry import RENEW_WITHIN, read_expiry
from webhook.cert_inject import inject_ca_bundle, pem_bundle
from webhook.certs import CertError, Pems, issue, service_dns_names

__all__ = ["Plan", "ensure_secret", "plan"]

# kube-scheduler's client pair sits beside the serving pair: the advisor mounts tls.crt, tls.key and
# ca.crt (to verify the client), kube-scheduler scheduler.crt, scheduler.key and ca.crt (to verify the advisor).
KEYS = {
    "ca_cert": "ca.crt",
    "ca_key": "ca.key",
    "cert": "tls.crt",
    "key": "tls.key",
    "client_cert": "scheduler.crt",
    "client_key": "scheduler.key",
}


@dataclass(frozen=True)
class Plan:
    pems: Pems
    changed: bool
    why: str


def _serving_fits(pems: dict[str, bytes], service: str, namespace: str, now: dt.datetime) -> str | None:
    """Why the stored serving pair will not do (None when it will)."""
    if "cert" not in pems or "key" not in pems:
        return "no serving certificate"
    cert, ca = x509.load_pem_x509_certificate(pems["cert"]), x509.load_pem_x509_certificate(pems["ca_cert"])
    expiry = read_expiry("tls.crt", pems["cert"])
    if expiry.due(now):
        return f"the serving certificate is due ({expiry.line(now)})"
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    if sans.get_values_for_type(x509.DNSName) != service_dns_names(service, namespace):
        return "the serving certificate names another Service"
    try:
        cert.verify_directly_issued_by(ca)
    except (InvalidSignature, ValueError, TypeError):
        return "the serving certificate was not issued by the stored CA"
    return _client_fits(pems, ca, now)


def _client_fits(pems: dict[str, bytes], ca: x509.Certificate, now: dt.datetime) -> str | None:
    """Why the stored client pair of kube-scheduler will not do (None when it will)."""
    if "client_cert" not in pems or "client_key" not in pems:
        return "no client certificate for kube-scheduler"
    expiry = read_expiry("scheduler.crt", pems["client_cert"])
    if expiry.due(now):
        return f"kube-scheduler's client certificate is due ({expiry.line(now)})"
    try:
        x509.load_pem_x509_certificate(pems["client_cert"]).verify_directly_issued_by(ca)
    except (InvalidSignature, ValueError, TypeError):
        return "kube-scheduler's client certificate was not issued by the stored CA"
    return None


def plan(
    stored: dict[str, bytes], service: str, namespace: str, now: dt.datetime, within: dt.timedelta = RENEW_WITHIN
) -> Plan:
    """What the Secret should hold now, given what it holds (``stored``: PEMs by ``Pems`` field)."""
    if "ca_cert" not in stored or "ca_key" not in stored:
        return Plan(issue(service, namespace, None, now), True, "created a CA and a serving certificate")
    ca = read_expiry("ca.crt", stored["ca_cert"])
    if ca.due(now, within):
        return Plan(issue(service, namespace, None, now), True, f"replaced the CA, which is due ({ca.line(now)})")
    why = _serving_fits(stored, service, namespace, now)
    if why is not None:
        pems = issue(service, namespace, (stored["ca_cert"], stored["ca_key"]), now)
        return Plan(pems, True, f"renewed the serving and client certificates: {why}")
    pems = Pems(*(stored[field] for field in KEYS))
    return Plan(pems, False, "nothing due: " + read_expiry("tls.crt", stored["cert"]).line(now))


def _secret_body(name: str, namespace: str, pems: Pems, resource_version: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": {"app.kubernetes.io/name": "gpu-advisor", "app.kubernetes.io/component": "webhook-tls"},
    }
    if resource_version:
        meta["resourceVersion"] = resource_version  # a concurrent writer makes this run fail, not both win
    data = {key: base64.b64encode(getattr(pems, field)).decode() for field, key in KEYS.items()}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "kubernetes.io/tls", "data": data}


def _read_secret(core: Any, name: str, namespace: str) -> tuple[dict[str, bytes], str | None]:
    from kubernetes.client.exceptions import ApiException

    try:
        doc = json.loads(core.read_namespaced_secret(name, namespace, _preload_content=False).data)
    except ApiException as exc:
        if exc.status == 404:
            return {}, None
        raise
    data = doc.get("data") or {}
    stored = {field: base64.b64decode(data[key]) for field, key in KEYS.items() if data.get(key)}
    return stored, (doc.get("metadata") or {}).get("resourceVersion")


def ensure_secret(
    core: Any, admission: Any, secret: str, namespace: str, service: str, config: str, now: dt.datetime | None = None
) -> list[str]:
    """Bring Secret ``namespace/secret`` up to date and inject its CA; returns what was done, a line each.

    ``core`` is a kubernetes ``CoreV1Api``, ``admission`` an ``AdmissionregistrationV1Api``.
    """
    now = now or dt.datetime.now(dt.UTC)
    stored, version = _read_secret(core, secret, namespace)
    decided = plan(stored, service, namespace, now)
    done = [f"secret {namespace}/{secret}: {decided.why}"]
    if decided.changed:
        body = _secret_body(secret, namespace, decided.pems, version)
        if version is None:
            core.create_namespaced_secret(namespace, body, _preload_content=False)
        else:
            core.replace_namespaced_secret(secret, namespace, body, _preload_content=False)
    injected = inject_ca_bundle(admission, config, pem_bundle(decided.pems.ca_cert))
    if not injected:
        raise CertError(f"{done[0]}; but no Mutating or Validating webhook configuration is named {config}")
    return [*done, "caBundle set on " + ", ".join(injected)]
