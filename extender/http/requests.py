"""HTTP helpers shared by every JSON endpoint (the extender, the dry-run API, the webhooks): bounded
body reading, parse errors as 400/413 with a message (never a 500), the one mapper from gpu-advisor's
errors to a status and ``{"detail": message}``, and small reply builders."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request, Response

from extender.errors import GpuAdvisorError, MalformedInput

__all__ = [
    "BadRequest",
    "json_reply",
    "problem",
    "problem_for",
    "read_body",
    "read_json",
]


class BadRequest(MalformedInput):
    """A request body that cannot be read at all: too large (413), empty, not JSON (400)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.http_status = status


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body, refused with 413 as soon as it passes ``limit`` bytes (declared or streamed)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BadRequest(413, f"body of {int(declared)} bytes is over the {limit}-byte limit")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise BadRequest(413, f"body is over the {limit}-byte limit")
    return bytes(body)


async def read_json(request: Request, limit: int) -> Any:
    body = await read_body(request, limit)
    if not body:
        raise BadRequest(400, "empty body: expected JSON")
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(400, f"body is not JSON: {exc}") from None


def problem(status: int, message: str) -> Response:
    return Response(json.dumps({"detail": message}), status_code=status, media_type="application/json")


def problem_for(exc: GpuAdvisorError) -> Response:
    """The one mapping from gpu-advisor's errors to HTTP: the error's status, its message as detail."""
    return problem(exc.http_status, str(exc))


def json_reply(doc: Any) -> Response:
    return Response(json.dumps(doc, separators=(",", ":")), media_type="application/json")
