"""A telemetry board plus the background loop that keeps it fresh (with backoff while it fails)."""

from __future__ import annotations

import logging
import threading

from extender.model.readings import TelemetryBoard
from extender.sources.backoff import Backoff
from extender.sources.invalid import printable

__all__ = ["Telemetry"]

log = logging.getLogger(__name__)


class Telemetry:
    """A board plus whatever keeps it fresh. The static source is only the board; polled sources
    override :meth:`refresh`, which runs every ``interval_s`` on a background thread (while it fails,
    retried after jittered, doubling waits of up to 5 minutes, the board meanwhile aging)."""

    interval_s: float = 15.0

    def __init__(self, board: TelemetryBoard, describe: str = "static") -> None:
        self.board = board
        self.describe = describe
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def refresh(self) -> int:
        """One poll; returns the number of GPU readings. Static values need none."""
        return len(self.board)

    def _loop(self) -> None:
        backoff = Backoff(self.interval_s, max(300.0, self.interval_s))
        while not self._stop.is_set():
            try:
                count = self.refresh()
                log.debug("telemetry from %s: %d GPU readings", self.describe, count)
                backoff.reset()
                wait = self.interval_s
            except Exception as exc:  # any failure: keep serving the aging board, say why, retry later
                self.board.failed(str(exc))
                wait = backoff.next_wait()
                log.warning(
                    "telemetry from %s failed: %s (readings age until it recovers; next try in %.0f s)",
                    self.describe,
                    printable(str(exc)),
                    wait,
                )
            self._stop.wait(wait)

    def start(self) -> None:
        if self._thread is None and type(self).refresh is not Telemetry.refresh:
            self._thread = threading.Thread(target=self._loop, name="telemetry", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
