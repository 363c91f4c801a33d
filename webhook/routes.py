"""The webhook's HTTP edge: /admission/mutate, /admission/validate and /admission/validate/enforce.

Which namespaces reach which endpoint is the webhook configuration's choice (namespaceSelector on the
label ``gpu-advisor.io/admission``), so the server needs no view of namespaces.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request, Response
from prometheus_client import CollectorRegistry, Counter, Histogram

from extender.errors import MalformedInput
from extender.http.advisor import Advisor
from extender.http.requests import BadRequest, ClientGone, problem, problem_for, read_json
from webhook.admission import (
    AdmissionSettings,
    BadReview,
    Mode,
    failure_review,
    parse_review,
    readable_uid,
    review_response,
)
from webhook.rules import ClusterView

__all__ = ["build_router"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Metrics:
    reviews: Counter
    seconds: Histogram
    findings: Counter
    failures: Counter


def _metrics(registry: CollectorRegistry) -> _Metrics:
    return _Metrics(
        reviews=Counter(
            "gpu_advisor_admission_reviews",
            "Admission reviews by endpoint and outcome",
            ["endpoint", "outcome"],
            registry=registry,
        ),
        seconds=Histogram(
            "gpu_advisor_admission_seconds",
            "Server time per admission review",
            ["endpoint"],
            registry=registry,
            buckets=(0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.05),
        ),
        findings=Counter("gpu_advisor_admission_findings", "Findings by rule code", ["code"], registry=registry),
        failures=Counter(
            "gpu_advisor_admission_failures",
            "Reviews gpu-advisor could not judge (internal errors), by endpoint; under enforce each was denied",
            ["endpoint"],
            registry=registry,
        ),
    )


REVIEW_BODY: dict[str, Any] = {
    "description": "An admission.k8s.io/v1 AdmissionReview request, as the API server sends it (at most 3 MiB).",
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["apiVersion", "kind", "request"],
                "properties": {
                    "apiVersion": {"const": "admission.k8s.io/v1"},
                    "kind": {"const": "AdmissionReview"},
                    "request": {"type": "object", "required": ["uid", "kind", "operation"]},
                },
            }
        }
    },
}
REVIEW_ERRORS: dict[int | str, dict[str, Any]] = {
    200: {"description": "an AdmissionReview response echoing the request's uid (also for unreadable objects)"},
    400: {"description": "the body is not JSON or not an AdmissionReview carrying a uid; {detail} says why"},
    408: {"description": "the body did not arrive within the body timeout"},
    413: {"description": "the body is over the admission limit (4 MiB)"},
    503: {"description": "too many request bodies held at once; retry"},
}


class _Handler:
    """One review in, one AdmissionReview out: never a 500, and never a silent admission under enforce."""

    def __init__(self, advisor: Advisor, settings: AdmissionSettings, limit: int) -> None:
        self.advisor, self.settings, self.limit = advisor, settings, limit
        self.metrics = _metrics(advisor.registry)

    async def __call__(self, request: Request, endpoint: str, mode: Mode, mutating: bool) -> Response:
        started = time.perf_counter()
        try:
            doc = await read_json(request, self.limit)
        except MalformedInput as exc:  # the body itself: too large, not JSON, nested too deeply
            return self._unanswerable(exc, endpoint, mode)
        uid = readable_uid(doc)
        try:
            answer = self._answer(doc, uid, mode, mutating)
        except MalformedInput as exc:  # not an AdmissionReview, and no uid to answer to
            return self._unanswerable(exc, endpoint, mode)
        except Exception:  # gpu-advisor's own failure: logged, counted, answered explicitly
            log.exception("admission review %s on %s could not be judged", uid, endpoint)
            self.metrics.failures.labels(endpoint).inc()
            if uid is None:
                return problem(400, "not an AdmissionReview request with a uid")
            answer = failure_review(uid, "warn" if mutating else mode)
        outcome = "allowed" if answer["response"]["allowed"] else "denied"
        self.metrics.reviews.labels(endpoint, outcome).inc()
        self.metrics.seconds.labels(endpoint).observe(time.perf_counter() - started)
        return Response(json.dumps(answer, separators=(",", ":")), media_type="application/json")

    def _unanswerable(self, exc: MalformedInput, endpoint: str, mode: Mode) -> Response:
        """400 for a body with no uid to answer to (the API server never sends one)."""
        if mode == "enforce" and not isinstance(exc, ClientGone):
            # The API server would apply the webhook's failurePolicy (Ignore: the object is admitted).
            log.warning("enforce-mode review unreadable (%s); the API server's failurePolicy decides", exc)
        self.metrics.reviews.labels(endpoint, "bad-request").inc()
        return problem_for(exc)

    def _answer(self, doc: Any, uid: str | None, mode: Mode, mutating: bool) -> dict[str, Any]:
        try:
            review = parse_review(doc)
        except BadReview as exc:
            if uid is None:
                raise BadRequest(400, str(exc)) from None
            # Shaped enough to answer: say what is wrong in the review itself (denied under enforce).
            return failure_review(uid, "warn" if mutating else mode, why=str(exc))
        view = ClusterView(tuple(self.advisor.state.nodes()), self.advisor.state.dra)
        answer, findings = review_response(review, view, mode, mutating, self.settings)
        for finding in findings:
            self.metrics.findings.labels(finding.code).inc()
        if findings:
            req = review.request
            allowed = "allowed" if answer["response"]["allowed"] else "denied"
            codes = ",".join(f.code for f in findings)
            log.info("%s %s/%s: %s → %s", req.kind.kind, req.namespace, req.name, codes, allowed)
        return answer


def build_router(advisor: Advisor, settings: AdmissionSettings, limit: int = 4 * 1024 * 1024) -> APIRouter:
    router = APIRouter()
    handle = _Handler(advisor, settings, limit)
    extra = {"requestBody": REVIEW_BODY}

    @router.post("/admission/mutate", tags=["admission webhook"], openapi_extra=extra, responses=REVIEW_ERRORS)
    async def mutate(request: Request) -> Response:
        return await handle(request, "mutate", "warn", mutating=True)

    @router.post("/admission/validate", tags=["admission webhook"], openapi_extra=extra, responses=REVIEW_ERRORS)
    async def validate(request: Request) -> Response:
        return await handle(request, "validate", "warn", mutating=False)

    @router.post(
        "/admission/validate/enforce", tags=["admission webhook"], openapi_extra=extra, responses=REVIEW_ERRORS
    )
    async def validate_enforce(request: Request) -> Response:
        return await handle(request, "validate-enforce", "enforce", mutating=False)

    return router
