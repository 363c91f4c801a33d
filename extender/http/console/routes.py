"""The web console's routes: its pages and assets (bundled, no CDN: it must work air-gapped) and the
JSON each view reads under /v1/console (so ``serve --api-auth`` guards them like the rest of /v1).

Every console reply carries a strict Content-Security-Policy: scripts and styles only from this
origin, none inline, so a name that slipped past the page's escaping still could not run.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from fastapi import APIRouter, Response

from extender.http.advisor import Advisor
from extender.http.console.cluster_view import cluster_view
from extender.http.console.node_view import node_view
from extender.http.console.pending_view import pending_view
from extender.http.console.pod_view import pod_view
from extender.http.requests import json_reply, problem

__all__ = ["CSP", "SECURITY_HEADERS", "build_router"]

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
_TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}
_NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "no such node or pod in the advisor's model"}}


def _asset(name: str) -> bytes | None:
    """A bundled file by its plain name (no paths: nothing outside the assets folder can be asked for)."""
    if "/" in name or "\\" in name or name.startswith("."):
        return None
    found = resources.files(__package__).joinpath("static", name)
    return found.read_bytes() if found.is_file() else None


def _served(body: bytes, name: str) -> Response:
    suffix = name[name.rfind(".") :]
    return Response(body, media_type=_TYPES.get(suffix, "application/octet-stream"), headers=SECURITY_HEADERS)


def _json(doc: Any) -> Response:
    reply = json_reply(doc)
    reply.headers.update(SECURITY_HEADERS)
    return reply


def _missing(detail: str) -> Response:
    """A 404 of the console's, with its headers too: the policy holds for every console reply."""
    reply = problem(404, detail)
    reply.headers.update(SECURITY_HEADERS)
    return reply


def build_router(advisor: Advisor) -> APIRouter:
    router = APIRouter()
    _page_routes(router)

    @router.get("/v1/console/cluster", tags=["console"])
    def console_cluster() -> Response:
        """Every node with its GPUs as tiles (free, allocated, busy, memory-held, unhealthy) and totals."""
        return _json(cluster_view(advisor))

    @router.get("/v1/console/nodes/{name}", tags=["console"], responses=_NOT_FOUND)
    def console_node(name: str) -> Response:
        """A node's GPU wiring, tiles and the best sets it could still give for k = 1, 2, 4, 8."""
        node = advisor.state.node(name)
        if node is None:
            return _missing(f"no node {name!r} in the advisor's model ({len(advisor.state.nodes())} nodes)")
        return _json(node_view(advisor, node))

    @router.get("/v1/console/pods/{namespace}/{name}", tags=["console"], responses=_NOT_FOUND)
    def console_pod(namespace: str, name: str) -> Response:
        """A bound GPU pod: its node and GPUs, and its shape judged on every node now."""
        view = pod_view(advisor, f"{namespace}/{name}")
        if view is None:
            return _missing(f"no GPU pod {namespace}/{name} bound to a node in the advisor's model")
        return _json(view)

    @router.get("/v1/console/pending", tags=["console"])
    def console_pending() -> Response:
        """Every pending GPU pod with its diagnosis and the per-node reasons."""
        return _json(pending_view(advisor))

    return router


def _page_routes(router: APIRouter) -> None:
    page = _asset("index.html") or b""

    # Deep links: each view's address serves the one page, which reads the address and draws the view.
    @router.get("/", include_in_schema=False)
    @router.get("/nodes/{_name}", include_in_schema=False)
    @router.get("/pods/{_namespace}/{_name}", include_in_schema=False)
    @router.get("/pending", include_in_schema=False)
    @router.get("/defrag", include_in_schema=False)
    @router.get("/what-if", include_in_schema=False)
    def console_page() -> Response:
        return _served(page, "index.html")

    @router.get("/docs", include_in_schema=False)
    def api_docs() -> Response:
        return _served(_asset("docs.html") or b"", "docs.html")

    @router.get("/console/{name}", include_in_schema=False)
    def console_asset(name: str) -> Response:
        body = _asset(name)
        if body is None:
            return _missing(f"no console asset {name!r}")
        return _served(body, name)
