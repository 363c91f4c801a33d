"""Query strings as people write them: ``?namespace=&window=7d`` leaves ``namespace`` out, it does not
ask for the namespace named "".

A form or a script that fills a URL template sends every parameter, the unset ones empty; each route
would otherwise have to tell "" from "not given" field by field (and ``min_gpus=`` would be a bad
number). One ASGI middleware drops the empty ones before any route reads them, so a route's default
is what an empty parameter gets.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["BlankQueryIsAbsent", "without_blank_values"]


def without_blank_values(query: bytes) -> bytes:
    """``a=&b=1&c`` → ``b=1&c``: pairs with an ``=`` and nothing after it are left out (a bare ``c`` is a
    flag someone meant, and stays)."""
    kept = []
    for pair in query.split(b"&"):
        _, sep, value = pair.partition(b"=")
        if pair and not (sep and not value):
            kept.append(pair)
    return b"&".join(kept)


class BlankQueryIsAbsent:
    """ASGI middleware: every request's query string without its empty parameters."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        query = scope.get("query_string", b"") if scope["type"] == "http" else b""
        if query and b"=" in query:
            trimmed = without_blank_values(query)
            if trimmed != query:
                scope = dict(scope, query_string=trimmed)
        await self.app(scope, receive, send)
