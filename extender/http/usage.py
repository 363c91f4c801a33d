"""GET /v1/usage: per-tenant GPU-hours allocated and used over a window (the report ``gpu-advisor usage
--json`` prints), and the tenants' hours as Prometheus gauges with a bounded label set."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from prometheus_client import Gauge

from extender.advice.usage import UsageReport, tenant_key, usage_report
from extender.http.advisor import Advisor
from extender.http.requests import json_reply, problem
from extender.sources.gpu_history import parse_window

__all__ = ["MAX_TENANTS", "build_router"]

MAX_TENANTS = 20  # gauge series per kind: the most allocated tenants; the rest sum into "(other)"
OTHER = "(other)"


class _TenantGauges:
    """The last report's tenants: GPU-hours allocated, used and idle, at most MAX_TENANTS + 1 each."""

    def __init__(self, advisor: Advisor) -> None:
        self.hours = Gauge(
            "gpu_advisor_usage_gpu_hours",
            "GPU-hours (GPU-equivalents) of the last usage report's tenants, by kind: allocated, used, idle",
            ["by", "tenant", "kind"],
            registry=advisor.registry,
        )

    def set(self, report: UsageReport) -> None:
        self.hours.clear()  # a tenant gone from the report leaves no stale series behind
        rows: dict[str, dict[str, float]] = {}
        for i, tenant in enumerate(report.tenants):  # most allocated first
            name = tenant.tenant if i < MAX_TENANTS else OTHER
            row = rows.setdefault(name, {"allocated": 0.0, "used": 0.0, "idle": 0.0})
            row["allocated"] += tenant.allocated_gpu_hours
            row["used"] += tenant.used_gpu_hours or 0.0
            row["idle"] += tenant.idle_gpu_hours or 0.0
        for name, row in rows.items():
            for kind, value in row.items():
                self.hours.labels(report.by, name, kind).set(value)


def build_router(advisor: Advisor) -> APIRouter:
    router = APIRouter(prefix="/v1")
    gauges = _TenantGauges(advisor)

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
            tenant_key(by)
        except ValueError as exc:
            return problem(400, str(exc))
        source = advisor.usage
        if source is None:
            return problem(404, "no usage history: start the server with --prometheus URL (kube-state-metrics)")
        try:
            pods = source.read(advisor.clock(), window_s)
        except (OSError, RuntimeError, ValueError) as exc:
            return problem(503, f"no usage history from {source.name}: {exc}")
        report = usage_report(pods, by, window_s / 3600, source.name)
        gauges.set(report)
        doc: dict[str, Any] = report.to_dict()
        return json_reply(doc)

    return router
