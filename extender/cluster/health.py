"""Is this replica fit to answer? What ``/readyz`` says, worked out from the model and its sources.

A replica is **unready** (503) only when its answers would be wrong, not merely less informed:

- the cluster model never synced: it knows no nodes and would fail every pod;
- a source says its model is stale: the API server watch heard nothing (no list, event, bookmark or
  ended watch) for longer than two whole watch periods, so pods bound or deleted since are missing
  and the replica would place onto GPUs that are taken. The scheduler then skips an ignorable
  extender (or another replica answers) rather than being told something false.

Everything else is **degraded but ready** (200, listed under ``degraded``): telemetry down or stale
(headroom is then scored neutral, which the scores say), a watch retrying within its limit, objects
the model took conservatively (``gpu_advisor_invalid_objects``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from extender.cluster.degradation import Degradation, SourceHealth  # re-exported: where callers found them

if TYPE_CHECKING:
    from extender.cluster.state import ClusterState
    from extender.model.readings import TelemetryBoard

__all__ = ["Degradation", "Readiness", "SourceHealth", "readiness"]


@dataclass(frozen=True)
class Readiness:
    ready: bool
    degraded: tuple[Degradation, ...]

    def body(self, source: str, nodes: int) -> dict[str, Any]:
        """The /readyz reply: ready or not, why not, and every degradation with its reason."""
        body: dict[str, Any] = {"ready": self.ready, "source": source, "nodes": nodes}
        unready = [d.reason for d in self.degraded if d.unready]
        if unready:
            body["reason"] = "; ".join(unready)
        if self.degraded:  # a healthy replica's reply stays as it always was
            body["degraded"] = [{"part": d.part, "reason": d.reason, "unready": d.unready} for d in self.degraded]
        return body


def readiness(state: ClusterState, telemetry: TelemetryBoard | None, now: float) -> Readiness:
    found: list[Degradation] = []
    if not state.ready:
        found.append(Degradation("cluster model", f"cluster model from {state.source} has not synced yet", True))
    if state.source_health is not None:
        found += state.source_health.degradations(now)
    if telemetry is not None:
        found += _telemetry(telemetry, now)
    return Readiness(not any(d.unready for d in found), tuple(found))


def _telemetry(board: TelemetryBoard, now: float) -> list[Degradation]:
    neutral = "GPU headroom is scored neutral until it recovers"
    if board.up is not False:
        return []
    since = "" if board.refreshed_at is None else f", last good poll {now - board.refreshed_at:.0f} s ago"
    return [Degradation("telemetry", f"{board.source}: last poll failed ({board.last_error}{since}); {neutral}", False)]
