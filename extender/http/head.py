"""HEAD answered as GET without the body (RFC 9110 §9.3.2): the console's pages, health and metrics.

FastAPI's routes, unlike Starlette's own, list only the methods they are declared with, so ``curl -I``
and uptime checkers that send HEAD got a 405 from pages a browser opens. One ASGI middleware runs the
GET route and drops what it writes as a body; the status and headers (Content-Length included) are the
GET's, as HEAD's are meant to be.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["HeadAsGet"]


class HeadAsGet:
    """ASGI middleware: a HEAD request is the GET request with its body left unsent."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app(dict(scope, method="GET"), receive, without_body)
