"""The ASGI guard in front of every route: a body is read whole before the app sees it, within its
endpoint's size limit, within a time limit, and only while the bodies held at once stay under the
in-flight budget — so neither one large request nor many slow ones can outgrow the memory limit.

Refusals are answered here, each naming the limit (413 too large, 408 too slow, 503 too many at once),
and counted in ``gpu_advisor_requests_refused``; a client that hangs up mid-body is dropped quietly.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from prometheus_client import CollectorRegistry, Counter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from extender.http.limits import MIB, Limits

__all__ = ["BodyGuard", "InFlight", "refused_counter"]

_NO_BODY = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})


class _Refused(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason = status, reason


class _Gone(Exception):
    """The client disconnected while sending its body."""


def refused_counter(registry: CollectorRegistry) -> Counter:
    """One per process: the plain and the TLS listener count into the same series."""
    return Counter(
        "gpu_advisor_requests_refused",
        "Requests refused before the app saw them, by reason",
        ["reason"],
        registry=registry,
    )


class InFlight:
    """The body bytes held by requests in progress; both listeners of a process draw on one."""

    def __init__(self) -> None:
        self.held = 0


class BodyGuard:
    def __init__(self, app: ASGIApp, limits: Limits, refused: Counter, in_flight: InFlight) -> None:
        self.app, self.limits, self.refused, self.in_flight = app, limits, refused, in_flight

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (scope["method"] in _NO_BODY and not _declared(scope)):
            await self.app(scope, receive, send)
            return
        hold = [0]  # the body bytes this request holds in the budget, released when it is answered
        try:
            try:
                body = await self._read(scope, receive, hold)
            except _Refused as exc:
                self.refused.labels(exc.reason).inc()
                await _answer(send, exc.status, str(exc))
                return
            except _Gone:
                self.refused.labels("client-gone").inc()
                return
            await self.app(scope, _replay(body, receive), send)
        finally:
            self.in_flight.held -= hold[0]

    def _reserve(self, hold: list[int], size: int) -> None:
        budget, held = self.limits.bodies_in_flight, self.in_flight.held
        more = size - hold[0]
        if more <= 0:
            return
        if held + more > budget:
            message = f"the server holds {held / MIB:.0f} MiB of request bodies (limit {budget / MIB:.0f} MiB)"
            raise _Refused(503, "busy", message)
        self.in_flight.held += more
        hold[0] = size

    async def _read(self, scope: Scope, receive: Receive, hold: list[int]) -> bytes:
        """The whole body within its endpoint's cap, the body timeout and the in-flight budget."""
        cap, what = self.limits.body_cap(scope["path"])
        declared = _declared(scope)
        if declared is not None and declared > cap:
            raise _Refused(413, "too-large", f"{what} body of {declared:,} bytes is over the {cap:,}-byte limit")
        self._reserve(hold, declared or 0)
        chunks: list[bytes] = []
        size = 0
        more = True
        try:
            # One deadline for the whole body (``wait_for`` per chunk would start a task per chunk).
            async with asyncio.timeout(self.limits.body_timeout_s):
                while more:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        raise _Gone()
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > cap:
                        raise _Refused(413, "too-large", f"{what} body is over the {cap:,}-byte limit")
                    self._reserve(hold, size)
                    chunks.append(chunk)
                    more = message.get("more_body", False)
        except TimeoutError:
            limit = self.limits.body_timeout_s
            raise _Refused(408, "body-timeout", f"the body did not arrive within {limit:g} s") from None
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _declared(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body in one message, then the real channel (for the disconnect that ends a stream)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _answer(send: Send, status: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),  # the rest of the body is not read: this connection is done
    ]
    if status == 503:
        headers.append((b"retry-after", b"1"))
    start: dict[str, Any] = {"type": "http.response.start", "status": status, "headers": headers}
    await send(start)
    await send({"type": "http.response.body", "body": body})
