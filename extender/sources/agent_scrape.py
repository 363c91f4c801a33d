"""Telemetry scraped straight from the node agents' /metrics (no DCGM exporter or Prometheus needed)."""

from __future__ import annotations

import logging
import time
import urllib.request
from collections.abc import Callable

from extender.model.dcgm import field_of
from extender.model.readings import TelemetryBoard
from extender.model.series_map import Directory
from extender.model.series_readings import Sample, readings_from_samples
from extender.sources.polling import Telemetry

__all__ = ["AgentScrapeTelemetry", "samples_from_exposition"]

log = logging.getLogger(__name__)


def samples_from_exposition(text: str, at: float) -> list[Sample]:
    """DCGM-named series in Prometheus text format (an agent's or an exporter's /metrics) → samples."""
    from prometheus_client.parser import text_string_to_metric_families

    samples = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if field_of(sample.name) is not None:
                samples.append(Sample(sample.name, dict(sample.labels), float(sample.value), at))
    return samples


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
        where: Callable[[], Directory] = Directory,
    ) -> None:
        super().__init__(board, "node agents")
        board.source = self.describe
        self.targets, self.interval_s, self.timeout_s, self.clock = targets, interval_s, timeout_s, clock
        self.where = where

    def refresh(self) -> int:
        samples: list[Sample] = []
        failed = []
        for url in self.targets():
            try:
                with urllib.request.urlopen(url, timeout=self.timeout_s) as resp:
                    text = resp.read().decode()
            except OSError as exc:
                failed.append(f"{url}: {exc}")
                continue
            samples.extend(samples_from_exposition(text, self.clock()))
        tally = readings_from_samples(samples, self.where(), self.clock())
        self.board.replace(tally.readings, self.clock(), tally.census)
        if failed:
            self.board.failed("; ".join(failed[:3]))
            log.warning("%d agents did not answer: %s", len(failed), self.board.last_error)
        return len(tally.readings)
