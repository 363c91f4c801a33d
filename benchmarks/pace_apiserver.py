"""The API server benchmarks/scheduler_pace.py serves ``gpu-advisor serve --cluster kube`` from: just
enough of /api/v1 over HTTP on 127.0.0.1 for the advisor's list and watch of Nodes and Pods.

Nodes are listed once and their watch stays quiet; bound pods are listed (none at first) and each
binding is sent on the pods watch as kube-apiserver sends it once kube-scheduler has bound a pod: the
Pod with ``spec.nodeName`` set and its ``PodScheduled`` condition. The DRA API answers 404, as a
cluster without resource.k8s.io/v1 does. Each watch reads only the events after its resourceVersion
(a list index), so the stand-in's own cost stays flat however many pods are bound.

For the bind verb it also takes what the advisor's binder sends: a merge patch of a Node's annotations
(then sent on the nodes watch) or of a Pod's, ``pods/<name>/binding``, which binds the pod as above, and
the claims Leases in the advisor's namespace (list, watch, read, create, merge patch under the Lease's
resourceVersion: 409 when another write came first).

Objects are as big as kube-apiserver's: a bound pod carries the ``managedFields`` of its creator and of
its binding, its defaulted spec and its status (as the real control plane's watch sends them; the
advisor's resident memory is measured against what it parses).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

__all__ = ["PaceApiServer"]

_FIRST_RV = 1000  # resourceVersion of the listed state; event i has _FIRST_RV + 1 + i


class PaceApiServer:
    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        self.nodes = nodes
        self.events: list[bytes] = []  # watch lines, in order (pods and nodes)
        self.kinds: list[str] = []  # which watch each line goes to
        self.pending: dict[str, dict[str, Any]] = {}  # pods patched before their binding, by namespace/name
        self.api_calls = 0  # writes the advisor's binder made
        self.bound: dict[str, dict[str, Any]] = {}
        self.leases: dict[str, dict[str, Any]] = {}  # namespace/name → the claims Lease
        self.sent = 0  # pod events written to a watch stream so far
        self.cond = threading.Condition()
        self.closing = False
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def kubeconfig(self, folder: Path) -> Path:
        """A kubeconfig naming this stand-in (a token it never checks)."""
        path = folder / "kubeconfig"
        user = {"name": "pace", "user": {"token": "pace"}}
        doc = {"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "pace", "cluster": {"server": self.url}}]}
        doc |= {"users": [user], "contexts": [{"name": "pace", "context": {"cluster": "pace", "user": "pace"}}]}
        path.write_text(json.dumps(doc | {"current-context": "pace"}))
        return path

    def __enter__(self) -> PaceApiServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self.cond:
            self.closing = True
            self.cond.notify_all()
        self._server.shutdown()
        self._server.server_close()

    def bind(self, pod: dict[str, Any], node: str) -> None:
        """kube-scheduler bound ``pod`` to ``node``: the pod as the watch then shows it."""
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        meta = dict(pod["metadata"])
        with self.cond:
            meta["resourceVersion"] = str(_FIRST_RV + 1 + len(self.events))
            meta["managedFields"] = managed_fields(pod, at)
            status = {
                "phase": "Pending",
                "conditions": [
                    {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": at}
                ],
                "qosClass": "Burstable",
            }
            bound = {**pod, "metadata": meta, "spec": {**pod["spec"], "nodeName": node}, "status": status}
            self.bound[f"{meta['namespace']}/{meta['name']}"] = bound
            self._event("pods", bound)

    def _event(self, kind: str, obj: dict[str, Any]) -> None:
        """Under ``cond``: one MODIFIED line for ``kind``'s watch."""
        self.events.append(json.dumps({"type": "MODIFIED", "object": obj}, separators=(",", ":")).encode() + b"\n")
        self.kinds.append(kind)
        self.cond.notify_all()

    def patch_node(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        with self.cond:
            self.api_calls += 1
            index = next(i for i, n in enumerate(self.nodes) if n["metadata"]["name"] == name)
            node = self.nodes[index]
            meta = {**node["metadata"], "resourceVersion": str(_FIRST_RV + 1 + len(self.events))}
            meta["annotations"] = {**(meta.get("annotations") or {}), **patch["metadata"].get("annotations", {})}
            self.nodes[index] = {**node, "metadata": meta}
            self._event("nodes", self.nodes[index])
            return self.nodes[index]

    # Set by the benchmark: the pod objects by name, for bindings the advisor posts.
    pods_by_name: ClassVar[dict[str, dict[str, Any]]] = {}

    def binder_bound(self, namespace: str, name: str, node: str, patch: dict[str, Any]) -> None:
        pod = self.pods_by_name[f"{namespace}/{name}"]
        notes = (patch.get("metadata") or {}).get("annotations") or {}
        meta = {**pod["metadata"], "annotations": {**(pod["metadata"].get("annotations") or {}), **notes}}
        self.bind({**pod, "metadata": meta}, node)

    def lease_write(self, method: str, namespace: str, name: str, body: dict[str, Any]) -> tuple[int, Any]:
        """Create (POST) or merge-patch a claims Lease: its answer's status and object."""
        with self.cond:
            self.api_calls += 1
            key = f"{namespace}/{name}"
            kept = self.leases.get(key)
            if method == "POST":
                if kept is not None:
                    return 409, _status(409, "AlreadyExists")
                meta = {**body["metadata"], "namespace": namespace, "uid": f"lease-{len(self.leases)}"}
                kept = {**body, "metadata": meta}
            else:
                wanted = (body.get("metadata") or {}).get("resourceVersion")
                if kept is None:
                    return 404, _status(404, "NotFound")
                if wanted and wanted != kept["metadata"]["resourceVersion"]:
                    return 409, _status(409, "Conflict")
                notes = {**(kept["metadata"].get("annotations") or {}), **body["metadata"].get("annotations", {})}
                kept = {**kept, "metadata": {**kept["metadata"], "annotations": notes}}
            kept["metadata"]["resourceVersion"] = str(_FIRST_RV + 1 + len(self.events))
            self.leases[key] = kept
            self._event("leases", kept)
            return (201 if method == "POST" else 200), kept

    def caught_up(self) -> bool:
        with self.cond:
            return self.sent >= len(self.events)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (_Handler,), {"api": self})


def _status(code: int, reason: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason}


def managed_fields(pod: dict[str, Any], at: str) -> list[dict[str, Any]]:
    """A bound pod's ``metadata.managedFields`` as kube-apiserver keeps them: its creator's fields (every
    field of its spec, each container's) and the binding's (``spec.nodeName``, the PodScheduled condition)."""

    def fields(value: Any) -> Any:
        if isinstance(value, dict):
            return {".": {}, **{f"f:{k}": fields(v) for k, v in value.items()}} if value else {}
        return {}

    spec = dict(pod["spec"])
    containers = {
        f'k:{{"name":"{c["name"]}"}}': {".": {}, **{f"f:{k}": fields(v) for k, v in c.items() if k != "name"}}
        for c in spec.pop("containers")
    }
    created = {f"f:{k}": fields(v) for k, v in spec.items()} | {"f:containers": containers}
    meta = {k: v for k, v in pod["metadata"].items() if k in ("labels", "annotations")}
    entry = {"operation": "Update", "apiVersion": "v1", "time": at, "fieldsType": "FieldsV1"}
    made = {"f:metadata": fields(meta), "f:spec": created} if meta else {"f:spec": created}
    return [
        {"manager": "kubectl-create", **entry, "fieldsV1": made},
        {
            "manager": "kube-scheduler",
            **entry,
            "fieldsV1": {
                "f:status": {
                    "f:conditions": {
                        ".": {},
                        'k:{"type":"PodScheduled"}': {
                            ".": {},
                            "f:lastProbeTime": {},
                            "f:lastTransitionTime": {},
                            "f:status": {},
                            "f:type": {},
                        },
                    }
                }
            },
            "subresource": "status",
        },
        {"manager": "gpu-advisor", **entry, "fieldsV1": {"f:spec": {"f:nodeName": {}}}, "subresource": "binding"},
    ]


class _Handler(BaseHTTPRequestHandler):
    """Requests to the stand-in; ``api`` is set on a subclass per server (``PaceApiServer._handler``)."""

    api: ClassVar[PaceApiServer]
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as a Go server: no answer waits for the ACK of a previous segment

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, doc: Any) -> None:
        body = json.dumps(doc, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        parsed = urllib.parse.urlparse(self.path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        kind = {"/api/v1/nodes": "nodes", "/api/v1/pods": "pods"}.get(parsed.path)
        parts = parsed.path.strip("/").split("/")
        if parts[:3] == ["apis", "coordination.k8s.io", "v1"] and parts[5:6] == ["leases"]:
            kind = "leases"
            if len(parts) == 7:  # one Lease
                with self.api.cond:
                    lease = self.api.leases.get(f"{parts[4]}/{parts[6]}")
                if lease is None:
                    self._send(404, _status(404, "NotFound"))
                else:
                    self._send(200, lease)
                return
        if kind is None:
            self._send(404, {"kind": "Status", "code": 404, "reason": "NotFound", "message": "not served"})
        elif query.get("watch") in ("true", "1"):
            self._watch(kind, int(query.get("resourceVersion") or _FIRST_RV), query)
        else:
            with self.api.cond:
                kept = {"nodes": self.api.nodes, "pods": self.api.bound.values(), "leases": self.api.leases.values()}
                items = list(kept[kind])
                rv = _FIRST_RV + len(self.api.events)
            list_kind = {"nodes": "NodeList", "pods": "PodList", "leases": "LeaseList"}[kind]
            meta = {"resourceVersion": str(rv)}
            if query.get("limit"):  # a page; its continue token is where the next one starts
                start, limit, total = int(query.get("continue") or 0), int(query["limit"]), len(items)
                items = items[start : start + limit]
                if start + limit < total:
                    meta["continue"] = str(start + limit)
            self._send(200, {"kind": list_kind, "apiVersion": "v1", "metadata": meta, "items": items})

    def _body(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def do_PATCH(self) -> None:
        parts, body = urllib.parse.urlparse(self.path).path.strip("/").split("/"), self._body()
        if parts[:3] == ["api", "v1", "nodes"]:
            self._send(200, self.api.patch_node(parts[3], body))
            return
        if parts[0] == "apis":  # a claims Lease
            self._send(*self.api.lease_write("PATCH", parts[4], parts[6], body))
            return
        with self.api.cond:  # a pod's annotations, before its binding (unbound pods are not watched)
            self.api.api_calls += 1
            self.api.pending[f"{parts[3]}/{parts[5]}"] = body
        self._send(200, body)

    def do_POST(self) -> None:
        parts, body = urllib.parse.urlparse(self.path).path.strip("/").split("/"), self._body()
        if parts[0] == "apis":  # a claims Lease created
            self._send(*self.api.lease_write("POST", parts[4], body["metadata"]["name"], body))
            return
        with self.api.cond:
            self.api.api_calls += 1
            patch = self.api.pending.pop(f"{parts[3]}/{parts[5]}", {})
        notes = {
            **((patch.get("metadata") or {}).get("annotations") or {}),
            **(body["metadata"].get("annotations") or {}),
        }
        self.api.binder_bound(parts[3], parts[5], body["target"]["name"], {"metadata": {"annotations": notes}})
        self._send(201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _watch(self, kind: str, since: int, query: dict[str, str]) -> None:
        deadline = time.monotonic() + min(float(query.get("timeoutSeconds") or 60), 60)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        at = since - _FIRST_RV  # index of the next event to send
        while time.monotonic() < deadline:
            with self.api.cond:
                if self.api.closing:
                    break
                pending = [e for e, k in zip(self.api.events[at:], self.api.kinds[at:], strict=True) if k == kind]
                moved = len(self.api.events) - at
                if not moved:
                    self.api.cond.wait(timeout=0.2)
                    continue
            for line in pending:
                self._chunk(line)
            at += moved
            with self.api.cond:
                self.api.sent = max(self.api.sent, at)
        self._chunk(b"")
