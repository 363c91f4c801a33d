"""The Helm chart as Helm v4's own Go library renders it (helm-python-sdk, no helm binary), and the
schema checks its objects go through.

``Chart.render`` of helm-python-sdk 0.2 does not pass a Kubernetes version or API versions on, but the
library's C ABI (``helm_render``) reads them from the same options document (``kube_version``,
``api_versions``: Helm's ``--kube-version`` and ``--api-versions``), so ``render`` calls it directly.
"""

from __future__ import annotations

import json
from typing import Any

import helm_python as helm
import kubernetes_validate
import yaml
from cloudcoil.models.cert_manager import v1 as cert_manager
from cloudcoil.models.prometheus_operator import v1 as prometheus_operator
from helm_python import _native
from pydantic import BaseModel

from tests.manifests.rendering import MANIFESTS, Doc

__all__ = ["CHART", "lint", "notes", "render", "validate"]

CHART = MANIFESTS / "helm" / "gpu-advisor"
RELEASE, NAMESPACE = "gpu-advisor", "gpu-advisor"


def lint(values: dict[str, Any] | None, kube_version: str) -> dict[str, Any]:
    return helm.lint(CHART, values, strict=True, namespace=NAMESPACE, kube_version=kube_version)


def render(
    values: dict[str, Any] | None = None, kube_version: str = "v1.36.0", api_versions: tuple[str, ...] = ()
) -> list[Doc]:
    """Every object the chart renders for an install (hooks included), as ``helm template`` would."""
    options = {
        "name": RELEASE,
        "namespace": NAMESPACE,
        "is_install": True,
        "kube_version": kube_version,
        "api_versions": list(api_versions),
    }
    with helm.Chart.load(CHART) as chart:
        chart.validate_schema(values)
        out = _native.call_string("helm_render", chart._raw(), json.dumps(values or {}), json.dumps(options))
    files: dict[str, str] = json.loads(out)
    return [
        doc
        for name, text in sorted(files.items())
        if not name.endswith("NOTES.txt")
        for doc in yaml.safe_load_all(text)
        if doc
    ]


def notes(values: dict[str, Any] | None = None) -> str:
    with helm.Chart.load(CHART) as chart:
        files = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    return next(text for name, text in files.items() if name.endswith("NOTES.txt"))


# Custom resources, checked against models generated from their projects' CRDs.
CUSTOM: dict[tuple[str, str], type[BaseModel]] = {
    ("cert-manager.io/v1", "Certificate"): cert_manager.Certificate,
    ("cert-manager.io/v1", "Issuer"): cert_manager.Issuer,
    ("monitoring.coreos.com/v1", "ServiceMonitor"): prometheus_operator.ServiceMonitor,
    ("monitoring.coreos.com/v1", "PodMonitor"): prometheus_operator.PodMonitor,
}


def validate(doc: Doc, kube_version: str) -> None:
    """Raises unless ``doc`` fits its kind's schema: Kubernetes' own OpenAPI (kubernetes-validate, strict:
    no unknown fields) for built-in kinds; for cert-manager and Prometheus Operator kinds their
    CRD-generated models, where a field the model drops on the way through is an unknown field."""
    model = CUSTOM.get((doc["apiVersion"], doc["kind"]))
    if model is None:
        version = kube_version.lstrip("v").split("-")[0].split("+")[0]
        kubernetes_validate.validate(doc, version.rsplit(".", 1)[0] + ".0", strict=True)
        return
    again = model.model_validate(doc).model_dump(by_alias=True, exclude_none=True, mode="json")
    assert again == doc, f"{doc['kind']} {doc['metadata']['name']}: fields its CRD does not know"
