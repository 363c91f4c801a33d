"""Telemetry scraped straight from the node agents' /metrics (no DCGM exporter or Prometheus needed)."""

from __future__ import annotations

import logging
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from extender.model.readings import GpuReading, TelemetryBoard
from extender.sources.polling import Telemetry
from extender.sources.prometheus import SERIES, readings_from_vectors

__all__ = ["AgentScrapeTelemetry", "readings_from_exposition"]

log = logging.getLogger(__name__)


def readings_from_exposition(text: str, at: float) -> dict[tuple[str, str], GpuReading]:
    """DCGM-named series in Prometheus text format (an agent's or an exporter's /metrics) → readings."""
    from prometheus_client.parser import text_string_to_metric_families

    vectors: dict[str, list[dict[str, Any]]] = {}
    wanted = {name: kind for kind, names in SERIES.items() for name in names}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            kind = wanted.get(sample.name)
            if kind is not None:
                vectors.setdefault(kind, []).append({"metric": dict(sample.labels), "value": [at, str(sample.value)]})
    return readings_from_vectors(vectors, at)


class AgentScrapeTelemetry(Telemetry):
    """Scrapes the node agents' /metrics directly, for clusters with neither DCGM exporter nor Prometheus.

    ``targets()`` names the agents to ask, e.g. every gpu-advisor agent pod's IP and port.
    """

    def __init__(
        self,
        targets: Callable[[], list[str]],
        board: TelemetryBoard,
        interval_s: float = 15.0,
        timeout_s: float = 3.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(board, "node agents")
        self.targets, self.interval_s, self.timeout_s, self.clock = targets, interval_s, timeout_s, clock

    def refresh(self) -> int:
        readings: dict[tuple[str, str], GpuReading] = {}
        failed = []
        for url in self.targets():
            try:
                with urllib.request.urlopen(url, timeout=self.timeout_s) as resp:
                    text = resp.read().decode()
            except OSError as exc:
                failed.append(f"{url}: {exc}")
                continue
            readings.update(readings_from_exposition(text, self.clock()))
        self.board.replace(readings, self.clock())
        if failed:
            self.board.last_error = "; ".join(failed[:3])
            log.warning("%d agents did not answer: %s", len(failed), self.board.last_error)
        return len(readings)
