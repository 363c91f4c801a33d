"""AdmissionReview v1 in, AdmissionReview v1 out: warnings, denials and the advice annotation.

Modes (chosen by the webhook configuration, which sends each namespace to its endpoint by the
namespace label ``gpu-advisor.io/admission``):

- ``warn`` (default): always allowed; findings come back as warnings, which kubectl prints.
- ``enforce``: ``error`` findings deny, with ``status.message`` naming the rule and the fix.
- ``off``: not sent at all (the configuration's namespaceSelector skips it); answered "allowed" if it is.

The mutating endpoint only writes the annotation ``gpu-advisor.io/advice`` (the finding codes) and, when
configured, ``schedulerName`` of GPU Pods that did not choose one; it is idempotent on reinvocation.

Every GPU object is also checked against the schedulers that call the advisor (``reach``): one whose pods
kube-scheduler will not ask the advisor about gets the ``scheduler-skips-advisor`` error finding, so a
warning under warn and a denial under enforce. Routing counts: a pod the mutating webhook routes is judged
by the scheduler it is routed to.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from extender.cluster.dra_view import pod_through_claims
from extender.errors import MalformedInput, validation_problems
from extender.model.pods import ANNOTATION_GPU_MEMORY, PodSpecError, pod_request, pod_template
from webhook.reach import AdvisorReach, reach_finding
from webhook.rules import ClusterView, Finding, evaluate_rules, invalid_request, workload_from

__all__ = [
    "ANNOTATION_ADVICE",
    "AdmissionReview",
    "AdmissionSettings",
    "BadReview",
    "Mode",
    "failure_review",
    "parse_review",
    "readable_uid",
    "review_response",
    "unreadable_finding",
]

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
    reach: AdvisorReach | None = None  # --scheduler-config FILE; None: the printed default (and the route)

    @property
    def advisor_reach(self) -> AdvisorReach:
        return self.reach if self.reach is not None else AdvisorReach.default(self.route_gpu_pods_to)


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
    annotations = _meta(obj).get("annotations")
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
        spec = obj.get("spec")
        chosen = spec.get("schedulerName") if isinstance(spec, Mapping) else None
        # The API server defaults schedulerName before admission: "default-scheduler" means none chosen.
        if chosen in (None, "", "default-scheduler") and chosen != settings.route_gpu_pods_to:
            op = "replace" if chosen is not None else "add"
            ops.append({"op": op, "path": "/spec/schedulerName", "value": settings.route_gpu_pods_to})
    return ops


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    meta = (obj or {}).get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def unreadable_finding(template: Mapping[str, Any] | None, exc: Exception) -> Finding:
    """The finding for an object whose GPU request or ``gpu-advisor.io/*`` values cannot be read."""
    if isinstance(exc, PodSpecError):
        message = str(exc)
    else:  # a value the parser did not foresee (a null container, a memory size of 400 digits, ...)
        annotations = _meta(template).get("annotations")
        memory = annotations.get(ANNOTATION_GPU_MEMORY) if isinstance(annotations, Mapping) else None
        shown = repr(str(memory)[:24] + ("..." if len(str(memory)) > 24 else ""))
        message = (
            f"annotation {ANNOTATION_GPU_MEMORY}: {shown} is not a usable memory size"
            if memory is not None
            else f"the pod spec cannot be read ({type(exc).__name__}: {exc})"
        )
    return invalid_request(message)


@dataclass
class _Judged:
    findings: list[Finding]
    is_gpu: bool = False


def _judge(
    req: AdmissionRequest, template: Mapping[str, Any], view: ClusterView, settings: AdmissionSettings
) -> _Judged:
    obj = req.object or {}
    meta = _meta(obj)
    name, namespace = str(meta.get("name") or req.name or ""), str(meta.get("namespace") or req.namespace or "")
    try:
        request = pod_request(template)
    except Exception as exc:  # anything the object's own values raise is a finding about the object
        return _Judged([unreadable_finding(template, exc)])
    # A failure past this point is gpu-advisor's own: the caller logs, counts and answers it.
    spec = template.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    # A Pod is scheduled once, after its CREATE, and its schedulerName is immutable: an UPDATE can change
    # nothing about who schedules it, so only a controller's template is judged again on UPDATE.
    reach = (
        reach_finding(spec, settings.advisor_reach, settings.route_gpu_pods_to)
        if req.operation == "CREATE" or obj.get("kind") != "Pod"
        else None
    )
    if not request.wants_gpu:
        # GPUs asked only through DRA claims: no rule reads them, but they must reach the advisor all the same
        if pod_through_claims(template, view.dra) is template:
            return _Judged([])
        return _Judged([reach] if reach else [], is_gpu=True)
    try:
        workload = workload_from(str(obj.get("kind")), name, namespace, template, request)
    except PodSpecError as exc:  # a field a rule reads is of the wrong type
        return _Judged([unreadable_finding(template, exc), *([reach] if reach else [])], is_gpu=True)
    findings = evaluate_rules(workload, view)
    return _Judged([*findings, reach] if reach else findings, is_gpu=True)


def _template(req: AdmissionRequest) -> tuple[Mapping[str, Any] | None, Finding | None]:
    obj = req.object
    if obj is None or req.operation not in ("CREATE", "UPDATE"):
        return None, None
    try:
        return pod_template(obj), None
    except Exception as exc:  # a spec or template that is not an object
        return None, unreadable_finding(obj, exc)


def review_response(
    review: AdmissionReview, view: ClusterView, mode: Mode, mutating: bool, settings: AdmissionSettings
) -> tuple[dict[str, Any], list[Finding]]:
    """The AdmissionReview to answer with, and the findings behind it."""
    req = review.request
    response: dict[str, Any] = {"uid": req.uid, "allowed": True}
    template, unreadable = _template(req) if mode != "off" else (None, None)
    judged = _Judged([unreadable] if unreadable else [])
    if template is not None:
        judged = _judge(req, template, view, settings)
    findings = judged.findings
    if mutating:
        ops = _patch(req.object or {}, findings, settings, judged.is_gpu, req.operation == "CREATE") if template else []
        if ops:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
    else:
        warnings = warnings_for(findings)
        if warnings:
            response["warnings"] = warnings
        errors = [f for f in findings if f.severity == "error"]
        if mode == "enforce" and errors:
            response["allowed"] = False
            response["status"] = _denial(req, errors)
    return _review(response), findings


def _denial(req: AdmissionRequest, errors: list[Finding]) -> dict[str, Any]:
    first = errors[0]
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return {
        "code": 403,
        "reason": "Forbidden",
        "message": f"gpu-advisor denied {req.kind.kind} {req.name or ''}: {first.code}: {first.message}; "
        f"fix: {first.advice}{more}",
    }


def _review(response: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def failure_review(uid: str, mode: Mode, why: str = "an internal error (see its logs)") -> dict[str, Any]:
    """The answer when gpu-advisor cannot judge: under enforce a denial that says so (never a silent
    admission through the webhook's failurePolicy), otherwise allowed with a warning."""
    said = f"gpu-advisor could not judge this object: {why}"
    if mode == "enforce":
        status = {"code": 403, "reason": "Forbidden", "message": f"{said}; denied because the namespace enforces"}
        return _review({"uid": uid, "allowed": False, "status": status})
    return _review({"uid": uid, "allowed": True, "warnings": [_clip(said)]})


def readable_uid(doc: Any) -> str | None:
    """The request's uid when the body is shaped enough to carry one (to echo in any answer)."""
    request = doc.get("request") if isinstance(doc, Mapping) else None
    uid = request.get("uid") if isinstance(request, Mapping) else None
    return uid if isinstance(uid, str) and uid else None
