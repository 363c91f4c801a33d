"""The ASGI apps: the plain port's (/v1, console, health, metrics; and the scheduler extender where it
cannot bind), the TLS port's (admission webhooks, health) and the extender port's (kube-scheduler's verbs
to a client certificate, and health), each answering only its own routes; ``create_app`` joins them in
one app for tests and tools.

In front of every route: the body guard (sizes, time, bytes in flight), when asked bearer-token
authentication for /v1, and HEAD answered as GET without the body.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Literal

from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, Counter, generate_latest
from starlette.types import ASGIApp, Receive, Scope, Send

from extender.cluster.health import readiness
from extender.http import api, console, rightsize, scheduler, telemetry, usage
from extender.http.advisor import Advisor
from extender.http.auth import TokenCheck
from extender.http.guard import BodyGuard, InFlight, refused_counter
from extender.http.head import HeadAsGet
from extender.http.limits import Limits
from extender.http.offloop import Lane
from extender.http.query import BlankQueryIsAbsent
from gpu_advisor.auth_guard import V1Auth
from gpu_advisor.openapi import document_edges
from webhook.admission import AdmissionSettings
from webhook.routes import build_router as build_webhook_router
from webhook.rules import advise_with_rules

__all__ = ["Edge", "Listener", "build_app", "create_app", "create_apps"]

Listener = Literal["plain", "tls", "scheduler", "all"]


@dataclass
class Edge:
    """What the listeners of one process share: limits, the judging lane, the refusal counter, auth."""

    advisor: Advisor
    admission: AdmissionSettings = field(default_factory=AdmissionSettings)
    limits: Limits = field(default_factory=Limits)
    auth: TokenCheck | None = None
    lane: Lane = field(default_factory=Lane)
    refused: Counter | None = None
    in_flight: InFlight = field(default_factory=InFlight)
    # The extender verbs on the plain port too. False once they have their own port (a client certificate
    # required): a live cluster's verbs can bind, and the plain port is open to whoever reaches it.
    verbs_on_plain: bool = True

    def __post_init__(self) -> None:
        if self.advisor.advise is None:
            self.advisor.advise = advise_with_rules
        if self.refused is None:
            self.refused = refused_counter(self.advisor.registry)


def create_app(advisor: Advisor, admission: AdmissionSettings | None = None) -> FastAPI:
    """Every route in one app: the extender, /v1, the webhooks, health and metrics."""
    return build_app(Edge(advisor, admission or AdmissionSettings()), "all")


def create_apps(edge: Edge) -> tuple[FastAPI, FastAPI]:
    """The plain port's app and the TLS port's app."""
    return build_app(edge, "plain"), build_app(edge, "tls")


def build_app(edge: Edge, listener: Listener) -> FastAPI:
    advisor = edge.advisor
    serves_api = listener in ("plain", "all")
    dry_runs = api.DryRuns(advisor, edge.limits, edge.lane) if serves_api else None

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        if dry_runs is not None:
            dry_runs.close()
        if verbs is not None and advisor.approvals is not None and advisor.approvals.binder is not None:
            await advisor.approvals.binder.aclose()  # the connections the bind verb kept to the API server

    app = AdvisorApp(
        title="gpu-advisor",
        summary="Topology-aware GPU placement advice for kube-scheduler",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,  # the console serves /docs from bundled files: the default loads Swagger from a CDN
        redoc_url=None,
    )
    app.state.advisor = advisor
    with_verbs = listener in ("scheduler", "all") or (listener == "plain" and edge.verbs_on_plain)
    verbs = scheduler.SchedulerVerbs(advisor, edge.lane) if with_verbs else None
    if verbs is not None:
        app.include_router(scheduler.build_router(verbs))
    elif listener == "plain":
        app.include_router(scheduler.elsewhere_router())
    if dry_runs is not None:
        app.include_router(api.build_router(advisor, dry_runs))
        app.include_router(telemetry.build_router(advisor))
        app.include_router(rightsize.build_router(advisor))
        app.include_router(usage.build_router(advisor))
        app.include_router(console.build_router(advisor))
    if listener in ("tls", "all"):
        # The one place extender code reaches into the webhook package: both live in one process.
        app.include_router(build_webhook_router(advisor, edge.admission, edge.limits.admission_body))
    _health_routes(app, advisor, metrics=listener != "scheduler")
    document_edges(app)
    assert edge.refused is not None
    app.add_middleware(BlankQueryIsAbsent)  # an empty ?name= is a parameter not given, on every route
    if verbs is not None:  # in front of the framework, behind the same guard: kube-scheduler's verbs
        lane = scheduler.ExtenderFastLane(app.framework, verbs)
        app.scheduler_lane = BodyGuard(lane, edge.limits, edge.refused, edge.in_flight)
    app.add_middleware(BodyGuard, limits=edge.limits, refused=edge.refused, in_flight=edge.in_flight)
    if edge.auth is not None and serves_api:
        app.add_middleware(V1Auth, check=edge.auth)  # no body is read before the token is checked
    app.add_middleware(HeadAsGet)  # outermost: every layer inside sees the GET it stands for
    return app


class AdvisorApp(FastAPI):
    """FastAPI, with kube-scheduler's verbs taken before its middleware stack. Every pod kube-scheduler
    places makes two or three calls; the stack's layers (error pages, HEAD, query and auth handling, none
    of which those calls need) were a tenth of the advisor's CPU per pod."""

    scheduler_lane: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        lane = self.scheduler_lane
        if lane is not None and scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in _LANE:
            await lane(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    async def framework(self, scope: Scope, receive: Receive, send: Send) -> None:
        await super().__call__(scope, receive, send)


_LANE = frozenset(scheduler.VERB_PATHS)


def _count_nodes(advisor: Advisor) -> None:
    """The node gauges, read from the model when scraped (each node's flag was worked out as it changed)."""
    nodes = advisor.state.nodes()
    advisor.metrics.nodes.set(len(nodes))
    advisor.metrics.overcommitted.set(sum(1 for n in nodes if n.overcommitted))


def _health_routes(app: FastAPI, advisor: Advisor, metrics: bool = True) -> None:
    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], responses={503: {"description": "the cluster model has not synced"}})
    def readyz(response: Response) -> dict[str, object]:
        """200 when this replica's answers are right, 503 when they would be wrong (the model never
        synced, or the API server watch has been silent too long); either way every degradation and
        its reason (see extender.cluster.health for which are which)."""
        state = advisor.state
        verdict = readiness(state, advisor.telemetry, advisor.clock())
        advisor.metrics.ready.set(1 if verdict.ready and not advisor.draining else 0)
        _count_nodes(advisor)
        body = verdict.body(state.source, len(state.nodes()))
        if advisor.draining:  # shutting down: leave the Service first, finish what was asked
            response.status_code = 503
            return {**body, "ready": False, "draining": True}
        if not verdict.ready:
            response.status_code = 503
        return body

    if not metrics:
        return

    @app.get("/metrics", tags=["health"])
    def scrape() -> Response:
        verdict = readiness(advisor.state, advisor.telemetry, advisor.clock())
        _count_nodes(advisor)
        advisor.metrics.ready.set(1 if verdict.ready else 0)
        return Response(generate_latest(advisor.registry), media_type=CONTENT_TYPE_LATEST)
