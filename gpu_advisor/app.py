"""The ASGI app: one process serves the scheduler extender and, mounted beside it, the admission webhook."""

from __future__ import annotations

from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from extender.cluster.health import readiness
from extender.http import api, scheduler, telemetry
from extender.http.advisor import Advisor
from webhook.admission import AdmissionSettings
from webhook.routes import build_router as build_webhook_router
from webhook.rules import advise_with_rules

__all__ = ["create_app"]


def create_app(advisor: Advisor, admission: AdmissionSettings | None = None) -> FastAPI:
    app = FastAPI(
        title="gpu-advisor",
        summary="Topology-aware GPU placement advice for kube-scheduler",
        version="0.1.0",
    )
    app.state.advisor = advisor
    if advisor.advise is None:
        advisor.advise = advise_with_rules
    app.include_router(scheduler.build_router(advisor))
    app.include_router(api.build_router(advisor))
    app.include_router(telemetry.build_router(advisor))
    # The one place extender code reaches into the webhook package: both live in one process.
    app.include_router(build_webhook_router(advisor, admission or AdmissionSettings()))

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"])
    def readyz(response: Response) -> dict[str, object]:
        """200 when this replica's answers are right, 503 when they would be wrong (the model never
        synced, or the API server watch has been silent too long); either way every degradation and
        its reason (see extender.cluster.health for which are which)."""
        state = advisor.state
        verdict = readiness(state, advisor.telemetry, advisor.clock())
        advisor.metrics.ready.set(1 if verdict.ready else 0)
        advisor.metrics.nodes.set(len(state.nodes()))
        if not verdict.ready:
            response.status_code = 503
        return verdict.body(state.source, len(state.nodes()))

    @app.get("/metrics", tags=["health"])
    def metrics() -> Response:
        verdict = readiness(advisor.state, advisor.telemetry, advisor.clock())
        advisor.metrics.nodes.set(len(advisor.state.nodes()))
        advisor.metrics.ready.set(1 if verdict.ready else 0)
        return Response(generate_latest(advisor.registry), media_type=CONTENT_TYPE_LATEST)

    return app
