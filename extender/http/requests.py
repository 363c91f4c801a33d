"""HTTP helpers shared by every JSON endpoint (the extender, the dry-run API, the webhooks): bounded
body reading, parse errors as 400/413 with a message (never a 500), the one mapper from gpu-advisor's
errors to a status and ``{"detail": message}``, and small reply builders."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request, Response
from starlette.requests import ClientDisconnect

from extender.errors import GpuAdvisorError, MalformedInput
from extender.http.shapes import check_shape

__all__ = [
    "BadRequest",
    "ClientGone",
    "json_reply",
    "parse_json",
    "problem",
    "problem_for",
    "read_body",
    "read_json",
]

MAX_DEPTH = 100


class BadRequest(MalformedInput):
    """A request body that cannot be read at all: too large (413), empty, not JSON (400)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.http_status = status


class ClientGone(BadRequest):
    """The client hung up before its body arrived: nobody reads the answer, nothing to log."""

    def __init__(self) -> None:
        super().__init__(400, "the client closed the connection before its body arrived")


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body, refused with 413 as soon as it passes ``limit`` bytes (declared or streamed)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BadRequest(413, f"body of {int(declared)} bytes is over the {limit}-byte limit")
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise BadRequest(413, f"body is over the {limit}-byte limit")
    except ClientDisconnect:
        raise ClientGone() from None
    return bytes(body)


def parse_json(body: bytes, max_depth: int | None = MAX_DEPTH) -> Any:
    """JSON, nested at most ``max_depth`` levels (None: only as deep as the parser itself goes)."""
    if not body.strip():
        raise BadRequest(400, "empty body: expected JSON")
    try:
        doc = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(400, f"body is not JSON: {exc}") from None
    except RecursionError:
        raise BadRequest(400, f"body nests deeper than the limit of {max_depth or 'the parser'} levels") from None
    if max_depth is not None:
        check_shape(doc, max_depth, max_values=len(body) + 1)  # JSON shares nothing: values ≤ bytes
    return doc


async def read_json(request: Request, limit: int, max_depth: int | None = MAX_DEPTH) -> Any:
    return parse_json(await read_body(request, limit), max_depth)


def problem(status: int, message: str) -> Response:
    return Response(json.dumps({"detail": message}), status_code=status, media_type="application/json")


def problem_for(exc: GpuAdvisorError) -> Response:
    """The one mapping from gpu-advisor's errors to HTTP: the error's status, its message as detail."""
    return problem(exc.http_status, str(exc))


def json_reply(doc: Any) -> Response:
    return Response(json.dumps(doc, separators=(",", ":")), media_type="application/json")
