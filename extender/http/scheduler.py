"""kube-scheduler's extender verbs on HTTP: an ASGI fast lane, and the documented FastAPI routes.

kube-scheduler calls filter and prioritize for every pod it places, with up to thousands of node names,
and waits for the answer; a warm answer costs well under a millisecond, so the framework's own work
(routing, dependency solving, Request and Response objects: ~0.1 ms a call) would be most of it. The
fast lane answers ``POST /scheduler/filter`` and ``/scheduler/prioritize`` straight from the ASGI
messages. It sits inside the body guard (size, time and in-flight limits hold as for every route) and
calls the same :class:`SchedulerVerbs` as the FastAPI routes, which stay for the OpenAPI document and
for any app that mounts the router without the lane.
"""

from __future__ import annotations

import json

from fastapi import APIRouter, Request, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from extender.http.advisor import Advisor
from extender.http.docs import EXTENDER_DOCS
from extender.http.offloop import Lane
from extender.http.requests import BadRequest, ClientGone, problem_for, read_body
from extender.http.verbs import Answer, SchedulerVerbs

__all__ = ["ELSEWHERE", "VERB_PATHS", "ExtenderFastLane", "SchedulerVerbs", "build_router", "elsewhere_router"]

ELSEWHERE = (
    "the extender verbs are not served on this port: they can bind pods, so the advisor answers them only on "
    "its extender port (HTTPS) to a client certificate its CA signed (kube-scheduler's extender tlsConfig)"
)


def build_router(verbs: SchedulerVerbs | Advisor, lane: Lane | None = None) -> APIRouter:
    """The documented routes (an Advisor is given its own verbs)."""
    verbs = verbs if isinstance(verbs, SchedulerVerbs) else SchedulerVerbs(verbs, lane)
    router = APIRouter()

    async def answer(request: Request, verb: str) -> Response:
        try:
            body = await read_body(request, verbs.advisor.max_body_bytes)
        except BadRequest as exc:
            verbs.advisor.metrics.requests.labels(verb, "bad-request").inc()
            return problem_for(exc)
        answer_verb = {"filter": verbs.filter, "prioritize": verbs.prioritize, "bind": verbs.bind}[verb]
        status, reply = await answer_verb(body)
        return Response(reply, status_code=status, media_type="application/json")

    @router.post("/scheduler/filter", tags=["scheduler extender"], **EXTENDER_DOCS)
    async def scheduler_filter(request: Request) -> Response:
        return await answer(request, "filter")

    @router.post("/scheduler/prioritize", tags=["scheduler extender"], **EXTENDER_DOCS)
    async def scheduler_prioritize(request: Request) -> Response:
        return await answer(request, "prioritize")

    @router.post("/scheduler/bind", tags=["scheduler extender"], **EXTENDER_DOCS)
    async def scheduler_bind(request: Request) -> Response:
        return await answer(request, "bind")

    return router


def elsewhere_router() -> APIRouter:
    """The verbs' paths on a port that does not serve them: 404, and where they are (no body is read)."""
    router = APIRouter()

    @router.post("/scheduler/{verb}", include_in_schema=False)
    async def elsewhere(verb: str) -> Response:
        return Response(json.dumps({"detail": ELSEWHERE}), status_code=404, media_type="application/json")

    return router


_JSON = (b"content-type", b"application/json")
VERB_PATHS = ("/scheduler/filter", "/scheduler/prioritize", "/scheduler/bind")  # the lane's, in front of all


class ExtenderFastLane:
    """ASGI middleware: the two extender verbs answered without the framework; the rest passes on."""

    def __init__(self, app: ASGIApp, verbs: SchedulerVerbs) -> None:
        self.app, self.verbs = app, verbs
        self.paths = dict(zip(VERB_PATHS, (verbs.filter_then, verbs.prioritize_then, verbs.bind_then), strict=True))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        verb = self.paths.get(scope["path"]) if scope["type"] == "http" else None
        if verb is None or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        try:
            body = await self._body(receive)
        except ClientGone:
            return
        except BadRequest as exc:
            status, reply, then = exc.http_status, problem_for(exc).body, None
        else:
            (status, reply), then = await verb(body)
        await _send(send, (status, bytes(reply)), close=self.verbs.advisor.draining)
        if then is not None:
            then()  # no await since the answer was sent: the loop reads no other call before this is done

    async def _body(self, receive: Receive) -> bytes:
        """The body; in front of this lane the guard has read it whole into one message."""
        limit = self.verbs.advisor.max_body_bytes
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise BadRequest(413, f"body is over the {limit}-byte limit")
            chunks.append(chunk)
            more = message.get("more_body", False)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def _send(send: Send, answer: Answer, close: bool = False) -> None:
    status, reply = answer
    headers = [(b"content-length", str(len(reply)).encode()), _JSON]
    if close:  # draining: the caller's next call opens a new connection, through the Service to a replica that stays
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": reply})
