"""HTTP helpers shared by every JSON endpoint (the extender, the dry-run API, the webhooks): bounded
body reading, parse errors as 400/413 with a message (never a 500), and small reply builders."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request, Response

__all__ = ["BadRequest", "json_reply", "problem", "read_body", "read_json", "read_manifest"]


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


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


def read_manifest(body: bytes) -> Any:
    """JSON or YAML (YAML is a superset); a parse error names its line."""
    import yaml

    if not body.strip():
        raise BadRequest(400, "empty body: expected a Pod or workload manifest (JSON or YAML)")
    try:
        return yaml.safe_load(body)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise BadRequest(400, f"manifest is not valid JSON or YAML: {where}{exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise BadRequest(400, f"manifest is not valid JSON or YAML: {exc}") from None


def problem(status: int, message: str) -> Response:
    return Response(json.dumps({"detail": message}), status_code=status, media_type="application/json")


def json_reply(doc: Any) -> Response:
    return Response(json.dumps(doc, separators=(",", ":")), media_type="application/json")
