"""Telemetry the advisor refused to believe, as metrics: series with values no GPU can have, and
agent series that named a node other than the one their agent runs on."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from extender.model.readings import TelemetryBoard

__all__ = ["TelemetryTrust"]


class TelemetryTrust(Collector):
    def __init__(self, board: TelemetryBoard) -> None:
        self.board = board

    def collect(self) -> Iterable[Metric]:
        rejected = CounterMetricFamily(
            "gpu_advisor_telemetry_rejected_series",
            "Series not used because no GPU can have their value (NaN, negative, over 100 %, over its memory)",
            labels=["reason"],
        )
        for reason, count in sorted(self.board.rejected.items()):
            rejected.add_metric([reason], count)
        misattributed = CounterMetricFamily(
            "gpu_advisor_telemetry_misattributed_series",
            "Agent series whose node label was not the node the agent runs on (attributed to the latter)",
        )
        misattributed.add_metric([], self.board.misattributed)
        yield from (rejected, misattributed)
