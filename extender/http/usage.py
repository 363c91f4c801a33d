"""GET /v1/usage: per-tenant GPU-hours allocated and used over a window (the report ``gpu-advisor usage
--json`` prints); the tenants' hours go to the gauges of ``extender.http.usage_gauges`` unless its
background refresh keeps them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from extender.advice.usage import tenant_key, usage_report
from extender.http.advisor import Advisor
from extender.http.requests import json_reply, problem
from extender.http.usage_gauges import MAX_TENANTS, tenant_gauges
from extender.sources.gpu_history import parse_window

__all__ = ["MAX_TENANTS", "build_router"]


def build_router(advisor: Advisor) -> APIRouter:
    router = APIRouter(prefix="/v1")
    gauges = tenant_gauges(advisor.registry)

    @router.get(
        "/usage",
        tags=["advice"],
        responses={
            400: {"description": "a bad window or by"},
            404: {"description": "this server has no usage history (started without --prometheus)"},
            503: {"description": "Prometheus did not answer"},
        },
    )
    def usage(by: str = "namespace", window: str = "30d") -> Response:
        """Per tenant (``by`` namespace, ``label:KEY`` or workload) over ``window``: GPU-hours allocated
        by product, sharing mode and MIG profile (slice-hours and GPU-equivalents), used and idle where
        DCGM meters the pods, and the top workloads; most allocated first."""
        try:
            window_s = parse_window(window)
        except ValueError as exc:
            return problem(400, str(exc))
        try:
            tenant_key(by)
        except ValueError as exc:
            return problem(400, f"query parameter by: {exc}")
        source = advisor.usage
        if source is None:
            return problem(404, "no usage history: start the server with --prometheus URL (kube-state-metrics)")
        try:
            pods = source.read(advisor.clock(), window_s)
        except (OSError, RuntimeError, ValueError) as exc:
            return problem(503, f"no usage history from {source.name}: {exc}")
        report = usage_report(pods, by, window_s / 3600, source.name)
        if not gauges.kept_fresh:
            gauges.set(report)
        doc: dict[str, Any] = report.to_dict()
        return json_reply(doc)

    return router
