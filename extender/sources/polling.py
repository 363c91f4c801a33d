"""A telemetry board plus the background loop that keeps it fresh (with backoff while it fails)."""

from __future__ import annotations

import logging
import threading

from extender.model.readings import TelemetryBoard

__all__ = ["Telemetry"]

log = logging.getLogger(__name__)


class Telemetry:
    """A board plus whatever keeps it fresh. The static source is only the board; polled sources
    override :meth:`refresh`, which runs every ``interval_s`` on a background thread (backing off to
    5 minutes while it fails, the board meanwhile aging)."""

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
        backoff = self.interval_s
        while not self._stop.is_set():
            try:
                count = self.refresh()
                log.debug("telemetry from %s: %d GPU readings", self.describe, count)
                backoff = self.interval_s
            except Exception as exc:  # any failure: keep serving the aging board, say why, retry later
                self.board.failed(str(exc))
                log.warning("telemetry from %s failed: %s (readings age until it recovers)", self.describe, exc)
                backoff = min(backoff * 2, 300.0)
            self._stop.wait(backoff)

    def start(self) -> None:
        if self._thread is None and type(self).refresh is not Telemetry.refresh:
            self._thread = threading.Thread(target=self._loop, name="telemetry", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
