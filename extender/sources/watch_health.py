"""How each API server watch fares: its state, when it last heard from the server, relists, errors.

Exported as metrics at scrape time and turned into ``/readyz`` degradations (``extender.cluster.health``
says which make a replica unready):

- ``gpu_advisor_watch_age_seconds{resource}``: since the last list, event or bookmark;
- ``gpu_advisor_watch_silence_seconds{resource}``: since the API server last answered at all (a list,
  an event, a watch opened or ended in order): what readiness judges;
- ``gpu_advisor_watch_relists_total{resource}``, ``gpu_advisor_watch_errors_total{resource}``;
- ``gpu_advisor_source_state{resource, state}``: 1 for the state each watch is in now; "not_offered"
  for an API the server does not serve or grant (DRA before Kubernetes 1.34): no error, nothing to wait for.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from extender.cluster.degradation import Degradation
from extender.sources.invalid import InvalidObjects, printable

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["STATES", "WatchHealth"]

STATES = ("starting", "listing", "watching", "retrying", "not_offered")


@dataclass
class _Watch:
    state: str = "starting"
    synced: bool = False
    last_event_at: float | None = None
    last_contact_at: float | None = None
    last_error: str | None = None
    errors: int = 0


class WatchHealth(Collector):
    def __init__(
        self,
        resources: Iterable[str],
        clock: Callable[[], float],
        stale_after_s: float,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.clock = clock
        self.stale_after_s = stale_after_s
        self._watches = {what: _Watch() for what in resources}
        self.relists = dict.fromkeys(self._watches, 0)
        self.invalid: InvalidObjects | None = None
        self._lock = threading.Lock()
        if registry is not None:
            registry.register(self)

    # -- what the watch loop reports ---------------------------------------------------------------

    def listing(self, what: str) -> None:
        watch = self._watches[what]
        if watch.state != "not_offered":  # asking again, quietly, is not news; an answer with items is
            watch.state = "listing"

    def listed(self, what: str) -> None:
        with self._lock:
            watch, now = self._watches[what], self.clock()
            watch.synced, watch.last_event_at, watch.last_contact_at = True, now, now
            if watch.state == "not_offered":  # served now
                watch.state = "listing"
            self.relists[what] += 1

    def watching(self, what: str) -> None:
        watch = self._watches[what]
        watch.state, watch.last_contact_at, watch.last_error = "watching", self.clock(), None

    def event(self, what: str) -> None:
        """An event or a bookmark."""
        watch, now = self._watches[what], self.clock()
        watch.last_event_at, watch.last_contact_at = now, now

    def contact(self, what: str) -> None:
        """The server ended a watch in order (its timeout): it is there, just quiet."""
        self._watches[what].last_contact_at = self.clock()

    def not_offered(self, what: str) -> None:
        """The API server answered that it does not serve (404) or grant (403) ``what``."""
        watch = self._watches[what]
        watch.state, watch.last_contact_at, watch.last_error = "not_offered", self.clock(), None

    def failed(self, what: str, why: str) -> None:
        with self._lock:
            watch = self._watches[what]
            watch.state, watch.last_error = "retrying", why
            watch.errors += 1

    def synced(self, what: str) -> bool:
        return self._watches[what].synced

    # -- what it means -----------------------------------------------------------------------------

    def degradations(self, now: float) -> Sequence[Degradation]:
        found = [d for what, watch in self._watches.items() if (d := self._judge(what, watch, now)) is not None]
        counts = self.invalid.counts() if self.invalid is not None else {}
        if counts:
            shown = ", ".join(f"{n} {kind} ({reason})" for (kind, reason), n in sorted(counts.items()))
            found.append(
                Degradation("cluster model", f"objects taken conservatively: {shown}; see the log", unready=False)
            )
        return found

    def _judge(self, what: str, watch: _Watch, now: float) -> Degradation | None:
        part = f"api watch ({what})"
        error = f": {printable(watch.last_error)}" if watch.last_error else ""
        if watch.last_contact_at is not None and now - watch.last_contact_at > self.stale_after_s:
            silent = now - watch.last_contact_at
            reason = (
                f"no word from the API server about {what} for {silent:.0f} s (limit {self.stale_after_s:.0f} s)"
                f"{error}; the model may miss pods bound or deleted since"
            )
            return Degradation(part, reason, unready=True)
        if watch.state == "retrying":
            return Degradation(part, f"retrying{error}", unready=False)
        return None

    def collect(self) -> Iterable[Metric]:
        now = self.clock()
        age = GaugeMetricFamily(
            "gpu_advisor_watch_age_seconds", "Seconds since the last list, event or bookmark", labels=["resource"]
        )
        silence = GaugeMetricFamily(
            "gpu_advisor_watch_silence_seconds", "Seconds since the API server last answered", labels=["resource"]
        )
        relists = CounterMetricFamily("gpu_advisor_watch_relists", "Full lists", labels=["resource"])
        errors = CounterMetricFamily("gpu_advisor_watch_errors", "Failed lists and watches", labels=["resource"])
        state = GaugeMetricFamily(
            "gpu_advisor_source_state", "1 for the state each watch is in", labels=["resource", "state"]
        )
        for what, watch in self._watches.items():
            if watch.last_event_at is not None:
                age.add_metric([what], max(0.0, now - watch.last_event_at))
            if watch.last_contact_at is not None:
                silence.add_metric([what], max(0.0, now - watch.last_contact_at))
            relists.add_metric([what], self.relists[what])
            errors.add_metric([what], watch.errors)
            for name in STATES:
                state.add_metric([what, name], 1.0 if watch.state == name else 0.0)
        yield from (age, silence, relists, errors, state)
