"""Objects the model had to take conservatively: counted by kind and reason, reported once each.

``gpu_advisor_invalid_objects{kind, reason}`` is the number of objects in the model now that have
that problem; an object fixed or deleted stops counting. Each (object, reason) is logged once, with
its name escaped: names and annotation values are written by whoever can create a Pod, and a raw
newline or terminal escape in a log line is a forged log line.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from extender.cluster.containment import Invalid

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["InvalidObjects", "printable"]

log = logging.getLogger(__name__)

# Remembered (object, reason) pairs already logged; past this many the memory starts over.
_MAX_REPORTED = 10_000


def printable(text: str, limit: int = 200) -> str:
    """Text for one log line: control and other non-printing characters escaped, cut at ``limit``."""
    out = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text[:limit])
    return out + (f"… ({len(text)} characters)" if len(text) > limit else "")


class InvalidObjects(Collector):
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self._current: dict[tuple[str, str], tuple[Invalid, ...]] = {}
        self._reported: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()
        if registry is not None:
            registry.register(self)

    def update(self, kind: str, name: str, problems: Iterable[Invalid]) -> None:
        """What is wrong with one object now (nothing: it is fine, or gone)."""
        problems = tuple(problems)
        with self._lock:
            if problems:
                self._current[kind, name] = problems
            else:
                self._current.pop((kind, name), None)
            fresh = [p for p in problems if (p.kind, p.name, p.reason) not in self._reported]
            if len(self._reported) + len(fresh) > _MAX_REPORTED:
                self._reported.clear()
            self._reported.update((p.kind, p.name, p.reason) for p in fresh)
        for p in fresh:
            log.warning("invalid %s %s (%s): %s", p.kind, printable(p.name), p.reason, printable(p.detail, 400))

    def retain(self, kind: str, names: Iterable[str]) -> None:
        """After a full list: forget the objects of ``kind`` that are no longer there."""
        keep = set(names)
        with self._lock:
            for key in [k for k in self._current if k[0] == kind and k[1] not in keep]:
                del self._current[key]

    def counts(self) -> dict[tuple[str, str], int]:
        """(kind, reason) → objects with that problem now."""
        out: dict[tuple[str, str], int] = {}
        with self._lock:
            for problems in self._current.values():
                for kind, reason in {(p.kind, p.reason) for p in problems}:
                    out[kind, reason] = out.get((kind, reason), 0) + 1
        return out

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(
            "gpu_advisor_invalid_objects",
            "Objects in the cluster model taken conservatively because part of them could not be read",
            labels=["kind", "reason"],
        )
        for (kind, reason), count in sorted(self.counts().items()):
            family.add_metric([kind, reason], count)
        yield family
