"""Leaving the Service before stopping: what a replica does with SIGTERM during a rolling upgrade."""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

from extender.http.advisor import Advisor

__all__ = ["DRAIN_S", "drain_on_sigterm"]

log = logging.getLogger(__name__)

DRAIN_S = 5.0  # longer than kube-proxy takes to drop a terminating pod's endpoints (about a second)


def drain_on_sigterm(servers: list[Any], advisor: Advisor, drain_s: float = DRAIN_S) -> None:
    """SIGTERM (a rolling upgrade, a scale-down) first drains: /readyz says 503, every extender answer
    closes its connection, and the servers keep answering for ``drain_s`` so that kube-scheduler's next
    call goes, on a new connection, to a replica that stays; then uvicorn's graceful shutdown finishes
    the calls in flight. A second signal, or SIGINT (Ctrl-C), stops at once."""
    exits = [server.handle_exit for server in servers]
    state = {"draining": False}

    def stop_all(sig: int, frame: Any) -> None:
        for handle in exits:
            handle(sig, frame)

    def handle_exit(sig: int, frame: Any) -> None:
        if sig != signal.SIGTERM or state["draining"]:
            stop_all(sig, frame)
            return
        state["draining"] = advisor.draining = True
        log.info("SIGTERM: draining for %.0f s (not ready, connections closed after each answer)", drain_s)
        timer = threading.Timer(drain_s, stop_all, (sig, frame))
        timer.daemon = True
        timer.start()

    for server in servers:
        server.handle_exit = handle_exit
