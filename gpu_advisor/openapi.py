"""The OpenAPI document says what the edges in front of the routes answer, not only the routes: every
request with a body can get 408/413/503 from the body guard, and every /v1 route 401/403 when
``serve --api-auth`` is on. Added to each operation once, when the document is first built."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

__all__ = ["document_edges"]

PROBLEM = {
    "application/json": {
        "schema": {"type": "object", "required": ["detail"], "properties": {"detail": {"type": "string"}}}
    }
}
GUARD = {
    "400": "the body is not what the endpoint reads (not JSON/YAML, nested deeper than 100 levels); detail says why",
    "408": "the body did not arrive within the body timeout",
    "413": "the body is over the endpoint's size limit (named in detail)",
    "503": "too many request bodies held at once; retry after a second",
}
AUTH = {
    "401": "no bearer token, or one the API server does not accept (serve --api-auth)",
    "403": "the token's user is in none of the groups allowed to use /v1 (serve --api-auth), or RBAC grants "
    "them no get of the path (serve --api-access-review)",
}


def document_edges(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
            for path, operations in doc.get("paths", {}).items():
                for method, operation in operations.items():
                    _add(operation, GUARD if method in ("post", "put", "patch") else {})
                    _add(operation, AUTH if path.startswith("/v1/") else {})
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _add(operation: dict[str, Any], replies: dict[str, str]) -> None:
    responses = operation.setdefault("responses", {})
    for status, description in replies.items():
        responses.setdefault(status, {"description": description})
        responses[status].setdefault("content", PROBLEM)
