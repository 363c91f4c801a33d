"""The agent's one call to the API server: a JSON merge patch of its own Node, over ``http.client``.

The kubernetes client would cost the agent ~33 MiB of its 60 MiB for this one request, so the agent
speaks it itself: ``PATCH /api/v1/nodes/<name>`` with ``Content-Type: application/merge-patch+json``
and the bearer token, verified against the cluster's CA.

Credentials as the kubernetes client finds them: in a pod, the ServiceAccount token and CA under
``/var/run/secrets/kubernetes.io/serviceaccount/`` and ``KUBERNETES_SERVICE_HOST``/``PORT``; otherwise a
kubeconfig (``extender.agent.kubeconfig``). A kubeconfig that needs more than a token, a client
certificate or a password (an exec plugin, an auth provider) is handed to the kubernetes client, loaded
only then.
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from extender.agent.api_target import ApiTarget, token_file  # re-exported: where callers found them
from extender.errors import SourceError

__all__ = [
    "SERVICE_ACCOUNT",
    "ApiTarget",
    "NodeApi",
    "NodeApiError",
    "NodeWriter",
    "in_cluster_target",
    "node_writer",
    "token_file",
]

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class NodeApiError(SourceError):
    """The API server could not be reached or refused the write; the message is one line for a person."""


class NodeWriter(Protocol):
    """Anything that can merge-patch a Node: the agent's own client, or the kubernetes client's."""

    def patch_node(self, name: str, patch: Mapping[str, Any]) -> None: ...


class NodeApi:
    """Merge patches to Nodes with stdlib HTTP; a new connection per call (writes are seconds apart)."""

    def __init__(self, target: ApiTarget, timeout_s: float = 10.0) -> None:
        parsed = urllib.parse.urlsplit(target.url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise NodeApiError(f"API server address {target.url!r} is not an http(s) URL")
        self.target = target
        self.timeout_s = timeout_s
        self._https = parsed.scheme == "https"
        self._host, self._port = parsed.hostname, parsed.port or (443 if self._https else 80)
        self._prefix = parsed.path.rstrip("/")

    def headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/merge-patch+json",
            "Accept": "application/json",
            "User-Agent": "gpu-advisor-agent",
        }
        if self.target.bearer is not None:
            headers["Authorization"] = f"Bearer {self.target.bearer()}"
        elif self.target.basic is not None:
            import base64

            pair = ":".join(self.target.basic).encode()
            headers["Authorization"] = f"Basic {base64.b64encode(pair).decode()}"
        return headers

    def _connection(self) -> http.client.HTTPConnection:
        if self._https:
            context = self.target.tls or ssl.create_default_context()
            return http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout_s, context=context)
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout_s)

    def patch_node(self, name: str, patch: Mapping[str, Any]) -> None:
        path = f"{self._prefix}/api/v1/nodes/{urllib.parse.quote(name, safe='')}"
        body = json.dumps(patch, separators=(",", ":")).encode()
        connection = self._connection()
        try:
            connection.request("PATCH", path, body=body, headers=self.headers())
            response = connection.getresponse()
            answer = response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise NodeApiError(
                f"cannot reach the API server at {self.target.url}: {exc or type(exc).__name__}"
            ) from None
        finally:
            connection.close()
        if response.status >= 300:
            raise NodeApiError(_refusal(response.status, response.reason, answer))


def _refusal(status: int, reason: str, body: bytes) -> str:
    """One line, as for the kubernetes client's errors: the status, reason and the server's message."""
    try:
        message = json.loads(body).get("message")
    except (ValueError, AttributeError):
        message = None
    return f"API server answered {status} {reason}" + (f": {message}" if message else "")


def in_cluster_target(environ: Mapping[str, str] = os.environ, account: Path = SERVICE_ACCOUNT) -> ApiTarget | None:
    """The API server as a pod sees it, or None outside a pod (no service address, token or CA)."""
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
    token, ca = account / "token", account / "ca.crt"
    if not host or not port or not token.is_file() or not ca.is_file():
        return None
    if not token.read_text().strip():
        return None
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"  # an IPv6 service address
    return ApiTarget(f"https://{netloc}", ssl.create_default_context(cafile=str(ca)), bearer=token_file(token))


def node_writer(kubeconfig: str | None = None) -> NodeWriter:
    """In-cluster credentials when running in a pod, else the kubeconfig (``--kubeconfig``, $KUBECONFIG or
    ~/.kube/config), as ``kube_api`` chooses for the other commands."""
    from extender.agent.kubeconfig import KubeconfigError, NeedsKubernetesClient, kubeconfig_target

    target = in_cluster_target()
    if target is not None:
        return NodeApi(target)
    try:
        return NodeApi(kubeconfig_target(kubeconfig))
    except NeedsKubernetesClient:
        return _kubernetes_client_writer(kubeconfig)
    except (KubeconfigError, OSError, ssl.SSLError) as exc:
        raise NodeApiError(f"cannot reach the API server: {exc}") from None


class _KubernetesClientWriter:
    """The kubernetes client's ``patch_node``, for credentials the agent's own client does not speak."""

    def __init__(self, api: Any) -> None:
        self.api = api  # kubernetes.client.CoreV1Api

    def patch_node(self, name: str, patch: Mapping[str, Any]) -> None:
        self.api.patch_node(name, dict(patch), _content_type="application/merge-patch+json")


def _kubernetes_client_writer(kubeconfig: str | None) -> NodeWriter:
    from extender.sources.kube import api_error_message, kube_api

    try:
        return _KubernetesClientWriter(kube_api(kubeconfig))
    except Exception as exc:  # the client raises many kinds; the user needs the one line
        raise NodeApiError(f"cannot reach the API server: {api_error_message(exc)}") from None
