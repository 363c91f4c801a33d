"""GET /v1/telemetry: where live readings come from, how the last poll went, which series matched a
node and GPU and which did not (with examples and the fix), and per-node coverage. Also the advisor's
telemetry metrics, and the per-GPU live view that /v1/nodes shows."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi import APIRouter
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from pydantic import BaseModel, Field

from extender.cluster.state import NodeState, format_time
from extender.http.advisor import Advisor
from extender.model.readings import GpuReading, TelemetryBoard

__all__ = ["GpuLive", "TelemetryCollector", "build_router", "gpus_live"]


class GpuLive(BaseModel):
    gpu: int
    mig: str | None = Field(None, description="MIG instance: '<GPU_I_ID> <profile>'; None for the whole GPU")
    sm_pct: float | None = Field(description="SM activity, %, a short window average")
    sm_source: str | None = Field(description="the DCGM field it came from")
    vram_used_mib: float | None = Field(description="used + reserved")
    vram_total_mib: float | None
    age_s: float | None = Field(description="age of the sample (None: static values)")
    stale: bool = Field(description="too old, or its exporter stopped: scored as neutral")
    pod: str | None = Field(description="namespace/name holding it: the exporter's attribution, else the model's")


def _live(key: str, reading: GpuReading, board: TelemetryBoard, now: float, holders: dict[int, str]) -> dict[str, Any]:
    index, _, mig = key[1:].partition(":mig")
    age = board.age(reading, now)
    # The exporter's attribution, else the pod the cluster model places on the whole GPU.
    pod = reading.pod or (None if mig else holders.get(int(index)))
    return {
        "gpu": int(index),
        "mig": f"{mig} {reading.mig}" if mig else None,
        "sm_pct": None if reading.sm_util is None else round(reading.sm_util, 1),
        "sm_source": reading.sm_source,
        "vram_used_mib": reading.memory_used_mib,
        "vram_total_mib": reading.memory_total_mib,
        "age_s": None if age is None else round(age, 1),
        "stale": board.is_stale(reading, now),
        "pod": pod,
    }


def gpus_live(node: NodeState, board: TelemetryBoard | None, now: float) -> list[dict[str, Any]]:
    """A node's readings, one per GPU (and MIG instance), for /v1/nodes."""
    if board is None:
        return []
    return [_live(key, reading, board, now, node.holders) for key, reading in board.of_node(node.name)]


def _coverage(node: NodeState, board: TelemetryBoard, now: float) -> dict[str, Any]:
    read = {int(key[1:].partition(":")[0]) for key, _ in board.of_node(node.name)}
    stale = sum(1 for _, r in board.of_node(node.name) if board.is_stale(r, now))
    if node.topology is not None:
        read |= {g.index for g in node.topology.gpus if board.reading(node.name, g) is not None}
        gpus = len(node.topology.indices)
    else:
        gpus = node.gpu_total
    age = board.node_age(node.name, now)
    return {
        "name": node.name,
        "gpus": gpus,
        "gpus_read": len(read),
        "stale_readings": stale,
        "age_s": None if age is None else round(age, 1),
    }


def telemetry_report(advisor: Advisor) -> dict[str, Any]:
    board, now = advisor.telemetry, advisor.clock()
    if board is None:
        return {"source": None, "note": "no telemetry source: headroom is scored neutral"}
    census = board.census
    nodes = sorted(advisor.state.nodes(), key=lambda n: n.name)
    return {
        "source": board.source,
        "up": board.up,
        "last_poll": None if board.refreshed_at is None else format_time(board.refreshed_at),
        "last_poll_age_s": None if board.refreshed_at is None else round(now - board.refreshed_at, 1),
        "last_error": board.last_error,
        "poll_errors": board.poll_errors,
        "max_age_s": board.max_age_s,
        "series": {
            "matched": census.matched if census else None,
            "unmatched": census.unmatched if census else None,
            "by_label": dict(census.via) if census else {},
            "unmatched_examples": [
                {"metric": u.metric, "labels": dict(u.labels), "reason": u.reason, "fix": u.fix}
                for u in (census.examples if census else [])
            ],
        },
        "nodes": [_coverage(n, board, now) for n in nodes if n.gpu_total or n.topology or n.mig_profiles()],
    }


class TelemetryCollector(Collector):
    """gpu_advisor_telemetry_* read from the board at scrape time."""

    def __init__(self, advisor: Advisor) -> None:
        self.advisor = advisor

    def collect(self) -> Iterable[Metric]:
        board, now = self.advisor.telemetry, self.advisor.clock()
        age = GaugeMetricFamily("gpu_advisor_telemetry_age_seconds", "Seconds since the last successful telemetry poll")
        up = GaugeMetricFamily("gpu_advisor_telemetry_source_up", "1 when the last telemetry poll worked")
        errors = CounterMetricFamily("gpu_advisor_telemetry_poll_errors", "Telemetry polls that failed")
        series = GaugeMetricFamily(
            "gpu_advisor_telemetry_series",
            "Series of the last poll by whether they found a node and GPU",
            labels=["state"],
        )
        if board is not None:
            if board.refreshed_at is not None:
                age.add_metric([], max(0.0, now - board.refreshed_at))
            up.add_metric([], 1.0 if board.up else 0.0)
            errors.add_metric([], board.poll_errors)
            if board.census is not None:
                series.add_metric(["matched"], board.census.matched)
                series.add_metric(["unmatched"], board.census.unmatched)
        yield from (age, up, errors, series)


def build_router(advisor: Advisor) -> APIRouter:
    router = APIRouter(prefix="/v1")
    advisor.registry.register(TelemetryCollector(advisor))

    @router.get("/telemetry", tags=["inventory"])
    def telemetry() -> dict[str, Any]:
        """The telemetry source, its last poll, series matched and unmatched (with examples and the
        relabeling that would fix them) and per-node coverage."""
        return telemetry_report(advisor)

    return router
