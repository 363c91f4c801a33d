"""The webhook's HTTP edge: /admission/mutate, /admission/validate and /admission/validate/enforce.

Which namespaces reach which endpoint is the webhook configuration's choice (namespaceSelector on the
label ``gpu-advisor.io/admission``), so the server needs no view of namespaces.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

from fastapi import APIRouter, Request, Response
from prometheus_client import CollectorRegistry, Counter, Histogram

from extender.errors import MalformedInput
from extender.http.advisor import Advisor
from extender.http.requests import problem_for, read_json
from webhook.admission import AdmissionSettings, Mode, parse_review, review_response
from webhook.rules import ClusterView

__all__ = ["build_router"]

log = logging.getLogger(__name__)
MAX_REVIEW_BYTES = 8 * 1024 * 1024  # the API server's own request limit is 3 MiB per object


@dataclass(frozen=True)
class _Metrics:
    reviews: Counter
    seconds: Histogram
    findings: Counter


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
    )


def build_router(advisor: Advisor, settings: AdmissionSettings) -> APIRouter:
    router = APIRouter()
    metrics = _metrics(advisor.registry)
    reviews = metrics.reviews

    async def handle(request: Request, endpoint: str, mode: Mode, mutating: bool) -> Response:
        started = time.perf_counter()
        try:
            review = parse_review(await read_json(request, MAX_REVIEW_BYTES))
        except MalformedInput as exc:  # BadRequest (the body) or BadReview (not an AdmissionReview)
            if mode == "enforce":
                # The API server will apply the webhook's failurePolicy (Ignore: the object is admitted).
                log.warning("enforce-mode review unreadable (%s); the API server's failurePolicy decides", exc)
            reviews.labels(endpoint, "bad-request").inc()
            return problem_for(exc)
        view = ClusterView(tuple(advisor.state.nodes()))
        answer, findings = review_response(review, view, mode, mutating, settings)
        for finding in findings:
            metrics.findings.labels(finding.code).inc()
        outcome = "allowed" if answer["response"]["allowed"] else "denied"
        reviews.labels(endpoint, outcome).inc()
        metrics.seconds.labels(endpoint).observe(time.perf_counter() - started)
        if findings:
            log.info(
                "%s %s/%s: %s → %s",
                review.request.kind.kind,
                review.request.namespace,
                review.request.name,
                ",".join(f.code for f in findings),
                outcome,
            )
        return Response(json.dumps(answer, separators=(",", ":")), media_type="application/json")

    @router.post("/admission/mutate", tags=["admission webhook"])
    async def mutate(request: Request) -> Response:
        return await handle(request, "mutate", "warn", mutating=True)

    @router.post("/admission/validate", tags=["admission webhook"])
    async def validate(request: Request) -> Response:
        return await handle(request, "validate", "warn", mutating=False)

    @router.post("/admission/validate/enforce", tags=["admission webhook"])
    async def validate_enforce(request: Request) -> Response:
        return await handle(request, "validate-enforce", "enforce", mutating=False)

    return router
