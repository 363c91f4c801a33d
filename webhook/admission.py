"""AdmissionReview v1 in, AdmissionReview v1 out: warnings, denials and the advice annotation.

Modes (chosen by the webhook configuration, which sends each namespace to its endpoint by the
namespace label ``gpu-advisor.io/admission``):

- ``warn`` (default): always allowed; findings come back as warnings, which kubectl prints.
- ``enforce``: ``error`` findings deny, with ``status.message`` naming the rule and the fix.
- ``off``: not sent at all (the configuration's namespaceSelector skips it); answered "allowed" if it is.

The mutating endpoint only writes the annotation ``gpu-advisor.io/advice`` (the finding codes) and, when
configured, ``schedulerName`` of GPU Pods that did not choose one; it is idempotent on reinvocation.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from extender.errors import MalformedInput, validation_problems
from extender.model.pods import PodSpecError, pod_request, pod_template
from webhook.rules import ClusterView, Finding, evaluate_rules, workload_from

__all__ = [
    "ANNOTATION_ADVICE",
    "AdmissionReview",
    "AdmissionSettings",
    "BadReview",
    "Mode",
    "parse_review",
    "review_response",
]

log = logging.getLogger(__name__)

ANNOTATION_ADVICE = "gpu-advisor.io/advice"
Mode = Literal["warn", "enforce", "off"]
MAX_WARNING = 120
MAX_WARNINGS_TOTAL = 4096


class BadReview(MalformedInput):
    """The body is not an AdmissionReview v1 request we can answer."""


class _Kind(BaseModel):
    model_config = ConfigDict(extra="ignore")
    group: str = ""
    version: str = ""
    kind: str = ""


class AdmissionRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    uid: str
    kind: _Kind
    name: str | None = None
    namespace: str | None = None
    operation: Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
    object: dict[str, Any] | None = None
    oldObject: dict[str, Any] | None = None
    dryRun: bool | None = None


class AdmissionReview(BaseModel):
    model_config = ConfigDict(extra="ignore")
    apiVersion: Literal["admission.k8s.io/v1"]
    kind: Literal["AdmissionReview"]
    request: AdmissionRequest


@dataclass(frozen=True)
class AdmissionSettings:
    route_gpu_pods_to: str | None = None  # --route-gpu-pods-to SCHEDULER


def parse_review(doc: Any) -> AdmissionReview:
    if not isinstance(doc, Mapping):
        raise BadReview("body must be a JSON object: an AdmissionReview")
    try:
        return AdmissionReview.model_validate(doc)
    except ValidationError as exc:
        raise BadReview(f"not an admission.k8s.io/v1 AdmissionReview request: {validation_problems(exc)}") from None


_ASCII = str.maketrans({"≈": "~", "≤": "<=", "≥": ">=", "×": "x", "→": "->", "…": "...", "↔": "<->", "—": "-"})


def _clip(text: str, limit: int = MAX_WARNING) -> str:
    """ASCII, at most ``limit`` characters: the API server measures warnings in bytes."""
    text = text.translate(_ASCII).encode("ascii", "replace").decode()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def warnings_for(findings: list[Finding]) -> list[str]:
    """Two lines a finding (what, then what to do), each ≤ 120 characters, 4096 in all."""
    lines: list[str] = []
    total = 0
    for f in findings:
        for line in (_clip(f"{f.code}: {f.message}"), _clip(f"{f.code}: {f.advice}")):
            if total + len(line) > MAX_WARNINGS_TOTAL:
                return lines
            lines.append(line)
            total += len(line)
    return lines


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _patch(
    obj: Mapping[str, Any], findings: list[Finding], settings: AdmissionSettings, is_gpu_pod: bool, creating: bool
) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    annotations = (obj.get("metadata") or {}).get("annotations")
    advice = ",".join(sorted({f.code for f in findings}))
    current = annotations.get(ANNOTATION_ADVICE) if isinstance(annotations, Mapping) else None
    path = f"/metadata/annotations/{_escape(ANNOTATION_ADVICE)}"
    if advice and current != advice:
        if not isinstance(annotations, Mapping):
            ops.append({"op": "add", "path": "/metadata/annotations", "value": {ANNOTATION_ADVICE: advice}})
        else:
            ops.append({"op": "replace" if current is not None else "add", "path": path, "value": advice})
    elif not advice and current is not None:
        ops.append({"op": "remove", "path": path})  # the advice no longer applies
    # Only on CREATE: a Pod's schedulerName is immutable afterwards, and an UPDATE patching it would fail.
    if settings.route_gpu_pods_to and is_gpu_pod and creating and obj.get("kind") == "Pod":
        chosen = (obj.get("spec") or {}).get("schedulerName")
        # The API server defaults schedulerName before admission: "default-scheduler" means none chosen.
        if chosen in (None, "", "default-scheduler") and chosen != settings.route_gpu_pods_to:
            op = "replace" if chosen is not None else "add"
            ops.append({"op": op, "path": "/spec/schedulerName", "value": settings.route_gpu_pods_to})
    return ops


def review_response(
    review: AdmissionReview, view: ClusterView, mode: Mode, mutating: bool, settings: AdmissionSettings
) -> tuple[dict[str, Any], list[Finding]]:
    """The AdmissionReview to answer with, and the findings behind it."""
    req = review.request
    response: dict[str, Any] = {"uid": req.uid, "allowed": True}
    findings: list[Finding] = []
    obj = req.object
    template = pod_template(obj) if obj is not None and req.operation in ("CREATE", "UPDATE") else None
    is_gpu = False
    if template is not None and mode != "off":
        meta = (obj or {}).get("metadata") or {}
        name, namespace = str(meta.get("name") or req.name or ""), str(meta.get("namespace") or req.namespace or "")
        try:
            request = pod_request(template)
        except PodSpecError as exc:
            findings = [Finding("invalid-gpu-request", "error", str(exc), "fix the value; see the gpu-advisor README")]
        else:
            is_gpu = request.wants_gpu
            if is_gpu:
                try:
                    workload = workload_from(str((obj or {}).get("kind")), name, namespace, template, request)
                    findings = evaluate_rules(workload, view)
                except Exception:  # advice must never block admission by crashing: allow, and say so
                    log.exception(
                        "admission rules failed for %s %s/%s: allowed unjudged", req.kind.kind, namespace, name
                    )
                    response["warnings"] = ["gpu-advisor could not evaluate this object (see its logs); allowed"]
    if mutating:
        creating = req.operation == "CREATE"
        ops = _patch(obj or {}, findings, settings, is_gpu, creating) if template is not None and mode != "off" else []
        if ops:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
    else:
        warnings = warnings_for(findings)
        if warnings:
            response["warnings"] = response.get("warnings", []) + warnings
        errors = [f for f in findings if f.severity == "error"]
        if mode == "enforce" and errors:
            first = errors[0]
            more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
            response["allowed"] = False
            response["status"] = {
                "code": 403,
                "reason": "Forbidden",
                "message": f"gpu-advisor denied {req.kind.kind} {req.name or ''}: {first.code}: {first.message}; "
                f"fix: {first.advice}{more}",
            }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}, findings
