"""The CA bundle into the webhook configurations: what lets the API server trust the serving certificate."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from cryptography import x509

__all__ = ["ca_bundle", "inject_ca_bundle", "pem_bundle"]


def pem_bundle(pem: bytes) -> str:
    """The base64 of a PEM CA certificate, as ``clientConfig.caBundle`` holds it; refuses anything else."""
    x509.load_pem_x509_certificate(pem)  # refuse to inject something that is not a certificate
    return base64.b64encode(pem).decode()


def ca_bundle(ca_cert: Path) -> str:
    """The base64 PEM that goes into ``clientConfig.caBundle``."""
    return pem_bundle(ca_cert.read_bytes())


def inject_ca_bundle(api: Any, name: str, bundle: str) -> list[str]:
    """Set caBundle on every webhook of the Mutating and Validating configurations called ``name``.

    ``api`` is a kubernetes ``AdmissionregistrationV1Api``. Returns what was patched ("mutating/NAME").
    """
    from kubernetes.client.exceptions import ApiException

    done = []
    for kind, read, patch in (
        ("mutating", api.read_mutating_webhook_configuration, api.patch_mutating_webhook_configuration),
        ("validating", api.read_validating_webhook_configuration, api.patch_validating_webhook_configuration),
    ):
        try:
            config = read(name, _preload_content=False)
        except ApiException as exc:
            if exc.status == 404:
                continue
            raise
        webhooks = (json.loads(config.data).get("webhooks")) or []
        ops = [
            {"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": bundle} for i in range(len(webhooks))
        ]
        if ops:
            patch(name, ops, _content_type="application/json-patch+json", _preload_content=False)
            done.append(f"{kind}/{name}")
    return done
