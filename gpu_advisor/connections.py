"""Connections that cannot be held open for nothing: uvicorn times out only idle keep-alive
connections, so a client that connects and sends nothing, or half a request line, or headers without
their end, keeps a socket (and its buffers) forever. Here every connection must deliver a request's
headers within ``header_s`` of connecting (or of its last response), and its body within ``body_s``;
otherwise it is closed. Answering is the app's business (the dry-run has its own budget).

And an answer leaves in one write: uvicorn writes a response's status line and headers, then its body,
each straight to the socket; over TLS that is two records, two segments and two wake-ups of the
caller for one small answer (kube-scheduler's verbs: two answers per pod). ``CoalescedWrites`` holds
what a response writes until it is complete, or until the loop's next turn for a streamed one.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

__all__ = ["CoalescedWrites", "deadline_protocol", "time_left"]


def time_left(cycle: Any, waited: float, header_s: float, body_s: float) -> float | None:
    """Seconds a connection has left to deliver what it owes (≤ 0: close it; None: it owes nothing,
    the request is in and the app answers it)."""
    if cycle is None or cycle.response_complete:  # no new request's headers yet
        return header_s - waited
    if cycle.more_body:  # headers in, body still arriving
        return body_s - waited
    return None


class CoalescedWrites:
    """A transport whose writes in one turn of the loop go out as one (on ``flush``, or at the next turn);
    everything else is the wrapped transport's."""

    def __init__(self, transport: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._transport, self._loop = transport, loop
        self._held: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._held:
            self._loop.call_soon(self.flush)  # a streamed response's part leaves at the loop's next turn
        self._held.append(bytes(data))

    def flush(self) -> None:
        if self._held:
            held, self._held = self._held, []
            self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = []
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def deadline_protocol(header_s: float, body_s: float, base: type[asyncio.Protocol] = AutoHTTPProtocol) -> type[Any]:
    """uvicorn's HTTP protocol (httptools or h11, whichever it uses) with read deadlines."""

    # The app's body guard answers a slow body with a 408 at ``body_s``; this closes what is left a
    # second later (a body stalled before the app read it, or a client that ignores the 408).
    body_s = body_s + 1.0

    class Deadlines(base):  # type: ignore[valid-type,misc]
        _timer: asyncio.TimerHandle | None = None
        _mark = 0.0

        def connection_made(self, transport: Any) -> None:
            super().connection_made(CoalescedWrites(transport, self.loop))
            self._arm(header_s)

        def on_response_complete(self) -> None:
            self.transport.flush()  # the whole answer in one write
            super().on_response_complete()
            self._arm(header_s)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self, after: float) -> None:
            self._disarm()
            self._mark = self.loop.time()
            self._timer = self.loop.call_later(after, self._check)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _check(self) -> None:
            self._timer = None
            if self.transport.is_closing():
                return
            left = time_left(self.cycle, self.loop.time() - self._mark, header_s, body_s)
            if left is not None and left <= 0:
                self.transport.close()
            elif left is not None:
                self._timer = self.loop.call_later(left, self._check)

    Deadlines.__name__ = f"Deadline{base.__name__}"
    return Deadlines
