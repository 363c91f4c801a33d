"""Optional bearer-token authentication for ``/v1/*``: the API server says whose token it is
(TokenReview), and the user must be in one of the allowed groups — or, with an access review, the API
server also says whether that user may ``get`` the path (SubjectAccessReview of a non-resource URL,
the kube-rbac-proxy way: RBAC grants ``nonResourceURLs: ["/v1/console/*"]``).

401 without a token or with one the API server does not accept; 403 when it does, but the user is in
none of the groups; 503 when the API server cannot be asked. Answers are cached for a minute (a
bounded cache, keyed by the token's hash), so a burst of calls costs one review.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from extender.errors import GpuAdvisorError, SourceError

__all__ = ["Access", "Identity", "NotAllowed", "TokenCheck", "kube_access_review", "kube_token_review", "kube_verb"]


@dataclass(frozen=True)
class Identity:
    username: str
    groups: tuple[str, ...]


class NotAllowed(GpuAdvisorError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.http_status = status


Review = Callable[[str], Identity | None]  # token → who (None: not authenticated); raises SourceError
Access = Callable[[Identity, str, str], str | None]  # (who, verb, path) → None if allowed, else why not


def kube_verb(method: str) -> str:
    """The verb an HTTP method is in a SubjectAccessReview, as kube-rbac-proxy and the API server map it."""
    return {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch"}.get(
        method, method.lower()
    )


class TokenCheck:
    def __init__(
        self,
        review: Review,
        groups: tuple[str, ...],
        ttl_s: float = 60.0,
        cached: int = 1024,
        access: Access | None = None,
    ) -> None:
        self.review, self.groups, self.ttl_s, self.cached, self.access = review, groups, ttl_s, cached, access
        self._answers: OrderedDict[bytes, tuple[float, Identity | None]] = OrderedDict()
        self._grants: OrderedDict[tuple[str, str, str], tuple[float, str | None]] = OrderedDict()

    async def identify(self, authorization: str | None, path: str = "/v1/", verb: str = "get") -> Identity:
        """Who sent the request (and may ``verb`` ``path``); raises NotAllowed (401/403) or SourceError (503)."""
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise NotAllowed(401, "/v1 needs 'Authorization: Bearer <token>' (a ServiceAccount or user token)")
        who = await self._who(token)
        if who is None:
            raise NotAllowed(401, "the API server does not accept this bearer token")
        if self.access is not None:
            why_not = await self._granted(who, verb, path)
            if why_not is not None:
                raise NotAllowed(403, f"user {who.username!r} may not {verb} {path}: {why_not}")
            return who
        if not set(who.groups) & set(self.groups):
            raise NotAllowed(
                403, f"user {who.username!r} is in none of the groups allowed to use /v1: {', '.join(self.groups)}"
            )
        return who

    async def _who(self, token: str) -> Identity | None:
        key = hashlib.sha256(token.encode()).digest()
        now = time.monotonic()
        hit = self._answers.get(key)
        if hit is not None and now - hit[0] < self.ttl_s:
            return hit[1]
        who = await asyncio.to_thread(self.review, token)
        self._answers[key] = (now, who)
        self._answers.move_to_end(key)
        while len(self._answers) > self.cached:
            self._answers.popitem(last=False)
        return who

    async def _granted(self, who: Identity, verb: str, path: str) -> str | None:
        assert self.access is not None
        key, now = (who.username, verb, path), time.monotonic()
        hit = self._grants.get(key)
        if hit is not None and now - hit[0] < self.ttl_s:
            return hit[1]
        why_not = await asyncio.to_thread(self.access, who, verb, path)
        self._grants[key] = (now, why_not)
        while len(self._grants) > self.cached:
            self._grants.popitem(last=False)
        return why_not


def kube_token_review(kubeconfig: str | None) -> Review:
    """A Review that asks the API server (in-cluster credentials, else the kubeconfig)."""
    from kubernetes import client

    from extender.sources.kube import api_error_message, kube_api

    try:
        kube_api(kubeconfig)  # loads the credentials into the client's default configuration
    except Exception as exc:  # no in-cluster credentials and no usable kubeconfig
        raise SourceError(f"--api-auth needs the API server: cannot load its credentials: {exc}") from None
    api = client.AuthenticationV1Api()

    def review(token: str) -> Identity | None:
        body = client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token))
        try:
            raw: Any = api.create_token_review(body, _preload_content=False, _request_timeout=5)
            status: Any = (json.loads(raw.data) or {}).get("status") or {}
        except Exception as exc:
            raise SourceError(f"cannot ask the API server about a token: {api_error_message(exc)}") from None
        user = status.get("user") if isinstance(status, dict) else None
        if not isinstance(user, dict) or status.get("authenticated") is not True:
            return None
        return Identity(str(user.get("username") or ""), tuple(str(g) for g in user.get("groups") or ()))

    return review


def kube_access_review(kubeconfig: str | None) -> Access:
    """An Access that asks the API server (SubjectAccessReview of the non-resource URL and verb)."""
    from kubernetes import client

    from extender.sources.kube import api_error_message

    kube_token_review(kubeconfig)  # the same credentials, loaded (or a SourceError saying why not)
    api = client.AuthorizationV1Api()

    def access(who: Identity, verb: str, path: str) -> str | None:
        attributes = client.V1NonResourceAttributes(path=path, verb=verb)
        spec = client.V1SubjectAccessReviewSpec(
            user=who.username, groups=list(who.groups), non_resource_attributes=attributes
        )
        try:
            raw: Any = api.create_subject_access_review(
                client.V1SubjectAccessReview(spec=spec), _preload_content=False, _request_timeout=5
            )
            status: Any = (json.loads(raw.data) or {}).get("status") or {}
        except Exception as exc:
            raise SourceError(f"cannot ask the API server about access: {api_error_message(exc)}") from None
        if isinstance(status, dict) and status.get("allowed") is True:
            return None
        reason = status.get("reason") if isinstance(status, dict) else None
        return str(reason or "no RBAC rule grants it (SubjectAccessReview denied)")

    return access
