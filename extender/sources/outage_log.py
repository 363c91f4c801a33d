"""One log line per change of a source's state, not one per retry.

A watch that cannot reach the API server retries with backoff for as long as the outage lasts; a
line per try says nothing new after the first. So: a WARNING when a resource starts failing or fails
for a different cause, DEBUG for each further try of the same cause, and one WARNING when it answers
again, with how many tries and how long it took. ``/readyz`` and the ``gpu_advisor_watch_*`` metrics
carry the live state meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["OutageLog"]


@dataclass
class _Outage:
    cause: str
    since: float
    tries: int = 1


class OutageLog:
    def __init__(self, log: logging.Logger, clock: Callable[[], float]) -> None:
        self.log, self.clock = log, clock
        self._outages: dict[str, _Outage] = {}

    def failed(self, what: str, cause: str, why: str, wait_s: float) -> None:
        """Another failed try of ``what``; ``cause`` groups tries (a status code, an exception type)."""
        outage = self._outages.get(what)
        if outage is not None and outage.cause == cause:
            outage.tries += 1
            self.log.debug("%s: %s; retrying in %.1f s (try %d)", what, why, wait_s, outage.tries)
            return
        self._outages[what] = _Outage(cause, outage.since if outage else self.clock())
        self.log.warning("%s: %s; retrying with backoff, logged again when this changes", what, why)

    def answered(self, what: str) -> None:
        """``what`` works again: one line if it had been failing, nothing otherwise."""
        outage = self._outages.pop(what, None)
        if outage is not None:
            took = self.clock() - outage.since
            self.log.warning(
                "%s: the API server answers again after %d failed tries in %.0f s", what, outage.tries, took
            )
