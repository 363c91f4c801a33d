"""Bearer-token authentication in front of /v1 (``serve --api-auth``): 401/403 with a message before any
body is read; the extender, health, metrics and webhook routes are not affected."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from extender.errors import GpuAdvisorError
from extender.http.auth import TokenCheck, kube_verb

__all__ = ["V1Auth"]


class V1Auth:
    def __init__(self, app: ASGIApp, check: TokenCheck) -> None:
        self.app, self.check = app, check

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope["path"]).startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        authorization = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"authorization"), None)
        try:
            await self.check.identify(authorization, str(scope["path"]), kube_verb(str(scope["method"])))
        except GpuAdvisorError as exc:
            await _refuse(send, exc.http_status, str(exc))
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="gpu-advisor"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
