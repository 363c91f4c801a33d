"""GET /v1/rightsize: which workloads hold more GPU than they use, and what to ask for instead (the
report ``gpu-advisor rightsize --json`` prints), and its totals as Prometheus metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from prometheus_client import Gauge

from extender.advice.rightsize import RightsizeReport, pod_facts, rightsize
from extender.http.advisor import Advisor
from extender.http.requests import json_reply, problem
from extender.sources.gpu_history import parse_window

__all__ = ["build_router"]


class _Totals:
    """The last report's totals, for dashboards and alerts."""

    def __init__(self, advisor: Advisor) -> None:
        registry = advisor.registry
        self.idle = Gauge(
            "gpu_advisor_rightsize_gpu_hours_idle", "GPU-hours held idle in the last report's window", registry=registry
        )
        self.held = Gauge(
            "gpu_advisor_rightsize_gpu_hours_held", "GPU-hours held in the last report's window", registry=registry
        )
        self.freed = Gauge(
            "gpu_advisor_rightsize_gpus_freeable", "GPUs the last report's advice would free", registry=registry
        )
        self.workloads = Gauge("gpu_advisor_rightsize_workloads", "GPU workloads in the last report", registry=registry)

    def set(self, report: RightsizeReport) -> None:
        self.idle.set(report.gpu_hours_idle)
        self.held.set(report.gpu_hours_held)
        self.freed.set(report.gpus_freed)
        self.workloads.set(len(report.advice))


def build_router(advisor: Advisor) -> APIRouter:
    router = APIRouter(prefix="/v1")
    totals = _Totals(advisor)

    @router.get(
        "/rightsize",
        tags=["advice"],
        responses={
            400: {"description": "a bad window or min_gpus"},
            404: {"description": "this server has no GPU history (started without --prometheus)"},
            503: {"description": "Prometheus did not answer"},
        },
    )
    def rightsize_report(namespace: str | None = None, window: str = "7d", min_gpus: str = "0") -> Response:
        """Per GPU workload (grouped by owner) over ``window``: GPUs held and used, SM p50/p95/max, VRAM
        p95/peak, hours observed, GPU-hours held idle, and the advice with its evidence, confidence,
        the GPUs it frees and its risk; most idle GPU-hours first."""
        try:
            window_s = parse_window(window)
        except ValueError as exc:
            return problem(400, str(exc))
        try:
            least = float(min_gpus)
        except ValueError:
            least = float("nan")
        if not 0 <= least < 1e6:
            return problem(400, f"min_gpus {min_gpus!r} is not a number of GPUs ≥ 0")
        source = advisor.rightsize
        if source is None:
            return problem(404, "no GPU history: start the server with --prometheus URL (DCGM exporter series)")
        try:
            series = source.read(advisor.clock(), window_s)
        except (OSError, RuntimeError, ValueError) as exc:
            return problem(503, f"no GPU history from {source.name}: {exc}")
        facts = pod_facts(source.pods())
        report = rightsize(
            series, facts.owner_of, window_s / 3600, source.name, facts.latency_sensitive, namespace, least
        )
        totals.set(report)
        doc: dict[str, Any] = report.to_dict()
        return json_reply(doc)

    return router
