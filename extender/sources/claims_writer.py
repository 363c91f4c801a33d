"""The bind verb's writes of a node's claims into its Lease (``extender.cluster.claim_leases``), in the
advisor's own namespace, and which namespace that is.

A write names the Lease's resourceVersion as read: the API server refuses it (409 Conflict) when another
binder wrote first, as it refuses a Lease created twice (409 AlreadyExists), and a Lease that is gone
(its node deleted, the garbage collector was there) answers 404. All three mean the same to the bind
verb: read the claims again and re-check (:class:`Stale`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kubernetes.client.exceptions import ApiException

from extender.cluster.claim_leases import ClaimLease, lease_name, lease_object
from extender.cluster.claims import ANNOTATION_CLAIMS

__all__ = ["ClaimsWriter", "Send", "Stale", "own_namespace"]

# One request to the API server: (method, path, JSON body or None, content type) → the answer's bytes;
# ApiException for an error status.
Send = Callable[[str, str, Any, str], bytes]
_MERGE_PATCH = "application/merge-patch+json"
# Where Kubernetes tells a pod its own namespace (every pod with a ServiceAccount token has it).
_SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class Stale(Exception):
    """Another binder wrote the node's claims first, or their Lease is gone: read them again."""


def own_namespace(chosen: str | None, default: str, env: Any = os.environ, namespace_file: Path | None = None) -> str:
    """The namespace of the claims Leases: ``--claims-namespace`` if given, else the pod's own (the
    ``POD_NAMESPACE`` variable, then the ServiceAccount's namespace file), else ``default``: every
    replica of one install finds the same one."""
    if chosen:
        return chosen
    if env.get("POD_NAMESPACE"):
        return str(env["POD_NAMESPACE"])
    try:
        found = (namespace_file or _SERVICE_ACCOUNT_NAMESPACE).read_text().strip()
    except OSError:  # not in a pod
        found = ""
    return found or default


class ClaimsWriter:
    def __init__(self, namespace: str, send: Send) -> None:
        self.namespace = namespace
        self.send = send

    def _path(self, name: str = "") -> str:
        base = f"/apis/coordination.k8s.io/v1/namespaces/{quote(self.namespace)}/leases"
        return f"{base}/{quote(name)}" if name else base

    def read(self, node: str) -> dict[str, Any] | None:
        """The node's claims Lease as the API server has it now; None when there is none."""
        try:
            found: dict[str, Any] = json.loads(self.send("GET", self._path(lease_name(node)), None, "application/json"))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return found

    def write(self, node: str, node_uid: str, claims: str, lease: ClaimLease | None) -> dict[str, Any]:
        """Write ``claims`` as the node's claims under ``lease``'s resourceVersion (None: there was no Lease,
        create it); the Lease as written. :class:`Stale` when the API server has another one."""
        try:
            if lease is None:
                body = lease_object(self.namespace, node, node_uid, claims)
                raw = self.send("POST", self._path(), body, "application/json")
            else:
                meta = {"resourceVersion": lease.resource_version, "annotations": {ANNOTATION_CLAIMS: claims}}
                patch = {"metadata": meta}
                raw = self.send("PATCH", self._path(lease.name), patch, _MERGE_PATCH)
        except ApiException as exc:
            if exc.status == 409 or (exc.status == 404 and lease is not None):
                raise Stale(f"{exc.status} {exc.reason}") from exc
            if exc.status == 404:  # creating: the namespace itself is missing
                why = f"{exc.reason}: the claims namespace {self.namespace} must exist (or serve --claims-namespace)"
                raise ApiException(status=404, reason=why) from exc
            raise
        written: dict[str, Any] = json.loads(raw)
        return written
