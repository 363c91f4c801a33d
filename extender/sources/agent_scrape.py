"""Telemetry scraped straight from the node agents' /metrics (no DCGM exporter or Prometheus needed).

Each agent is found through the API server as a pod, and its series are attributed to the node that
pod runs on (``spec.nodeName``), never to the ``Hostname`` label the agent writes about itself: an
agent that says it is another node (compromised, or misconfigured) would otherwise set that node's
telemetry, or every node's. A series whose label disagrees is counted and logged once per agent.
"""

from __future__ import annotations

import logging
import time
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from extender.model.dcgm import field_of
from extender.model.readings import TelemetryBoard
from extender.model.series_map import Directory
from extender.model.series_readings import Sample, readings_from_samples
from extender.sources.invalid import printable
from extender.sources.polling import Telemetry

__all__ = ["AgentScrapeTelemetry", "AgentTarget", "attribute", "samples_from_exposition"]

log = logging.getLogger(__name__)

# The labels by which a series could name a node; the scrape overrides them all.
_NODE_LABELS = ("node", "kubernetes_node", "Hostname", "hostname", "instance")


@dataclass(frozen=True)
class AgentTarget:
    url: str  # the agent's /metrics
    node: str  # spec.nodeName of the agent's pod: the only node its series may speak for


def samples_from_exposition(text: str, at: float) -> list[Sample]:
    """DCGM-named series in Prometheus text format (an agent's or an exporter's /metrics) → samples."""
    from prometheus_client.parser import text_string_to_metric_families

    samples = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if field_of(sample.name) is not None:
                samples.append(Sample(sample.name, dict(sample.labels), float(sample.value), at))
    return samples


def attribute(samples: Iterable[Sample], node: str) -> tuple[list[Sample], list[str]]:
    """The samples, each placed on ``node`` whatever its labels claim; and the other nodes claimed."""
    placed, claims = [], []
    for sample in samples:
        claimed = {sample.labels.get(k) for k in ("node", "kubernetes_node", "Hostname", "hostname")} - {None, ""}
        claims += sorted(str(c) for c in claimed if c != node)
        labels = {k: v for k, v in sample.labels.items() if k not in _NODE_LABELS}
        placed.append(Sample(sample.metric, {**labels, "node": node}, sample.value, sample.at, sample.live))
    return placed, claims


class AgentScrapeTelemetry(Telemetry):
    """Scrapes the node agents' /metrics directly, for clusters with neither DCGM exporter nor Prometheus.

    ``targets()`` names the agents to ask and the node each runs on (``kube.agent_targets``).
    """

    def __init__(
        self,
        targets: Callable[[], list[AgentTarget]],
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
        self._reported: set[tuple[str, str]] = set()  # (agent node, claimed node) already logged

    def refresh(self) -> int:
        samples: list[Sample] = []
        failed = []
        for target in self.targets():
            try:
                with urllib.request.urlopen(target.url, timeout=self.timeout_s) as resp:
                    text = resp.read().decode()
            except OSError as exc:
                failed.append(f"{target.url}: {exc}")
                continue
            placed, claims = attribute(samples_from_exposition(text, self.clock()), target.node)
            samples.extend(placed)
            self._misattributed(target, claims)
        tally = readings_from_samples(samples, self.where(), self.clock())
        self.board.replace(tally.readings, self.clock(), tally.census, tally.rejected)
        if failed:
            self.board.failed("; ".join(failed[:3]))
            log.warning("%d agents did not answer: %s", len(failed), self.board.last_error)
        return len(tally.readings)

    def _misattributed(self, target: AgentTarget, claims: list[str]) -> None:
        self.board.misattributed += len(claims)
        for claimed in sorted(set(claims)):
            if (target.node, claimed) not in self._reported and len(self._reported) < 10_000:
                self._reported.add((target.node, claimed))
                log.warning(
                    "the agent at %s runs on node %s but labels its series %s: counted for %s only",
                    printable(target.url),
                    printable(target.node),
                    printable(claimed),
                    printable(target.node),
                )
