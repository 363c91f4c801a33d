"""An HTTP-level stand-in for kube-apiserver on 127.0.0.1: enough of /api/v1 for nodes and pods, and
(with ``serve_dra``) of resource.k8s.io/v1 for ResourceSlices, ResourceClaims and ResourceClaimTemplates.

It speaks what the real server speaks to the real ``kubernetes`` client: lists with a
``resourceVersion``, watches as chunked streams of JSON lines (``ADDED``/``MODIFIED``/``DELETED``/
``BOOKMARK``), a 410 Gone ``ERROR`` event for an expired resourceVersion, merge-patches on nodes (refused
with 409 Conflict when the patch names a resourceVersion that is not the node's, as the real server
does), reads of one node or pod, and ``pods/<name>/binding`` (409 when the pod is bound already).
Tests script trouble: drop the next watch connection mid-stream, or expire history.
"""

from __future__ import annotations

import bisect
import copy
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.apiserver_writes import Writes
from tests.fakes.kube_objects import node, pod
from tests.fakes.kube_objects import status as _status

__all__ = ["FakeApiServer", "node", "pod"]

_DRA = "/apis/resource.k8s.io/v1/"
PATHS = {
    "/api/v1/nodes": "nodes",
    "/api/v1/pods": "pods",
    **{_DRA + plural: plural for plural in ("resourceslices", "resourceclaims", "resourceclaimtemplates")},
}
_CLUSTER_WIDE = ("nodes", "resourceslices")


class FakeApiServer(Writes):
    def __init__(self, port: int = 0, serve_dra: bool = False) -> None:
        self.lock = threading.Condition()
        self.rv = 100
        self.serve_dra = serve_dra  # False: resource.k8s.io/v1 answers 404, as before Kubernetes 1.34
        self.objects: dict[str, dict[str, dict[str, Any]]] = {kind: {} for kind in PATHS.values()}
        self.events: list[tuple[int, str, str, dict[str, Any]]] = []  # (rv, kind, type, object)
        self.oldest_rv = 0  # watches from before this get 410 Gone
        self.drop_next_watch: dict[str, int] = {}  # kind → events to send before cutting the connection
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []  # (method, path, headers, body)
        self.watch_count = dict.fromkeys(self.objects, 0)
        self.documents: dict[str, dict[str, Any]] = {}  # any other object, by its API path
        self.list_count = dict.fromkeys(self.objects, 0)
        self.bindings: list[tuple[str, str]] = []  # (namespace/name, node) in the order they were bound
        self.conflicts = 0  # node patches refused for a stale resourceVersion
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeApiServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.lock.notify_all()
        self._server.shutdown()
        self._server.server_close()

    # -- the world --------------------------------------------------------------------------------

    def _key(self, kind: str, obj: dict[str, Any]) -> str:
        meta = obj["metadata"]
        return meta["name"] if kind in _CLUSTER_WIDE else f"{meta.get('namespace', 'default')}/{meta['name']}"

    def put(self, kind: str, obj: dict[str, Any]) -> None:
        with self.lock:
            self.rv += 1
            obj = copy.deepcopy(obj)
            obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
            if kind == "pods":
                obj["metadata"].setdefault("uid", f"uid-{obj['metadata']['name']}")
            key = self._key(kind, obj)
            kind_of_event = "MODIFIED" if key in self.objects[kind] else "ADDED"
            self.objects[kind][key] = obj
            self.events.append((self.rv, kind, kind_of_event, copy.deepcopy(obj)))
            self.lock.notify_all()

    def delete(self, kind: str, key: str) -> None:
        with self.lock:
            self.rv += 1
            obj = self.objects[kind].pop(key)
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self.events.append((self.rv, kind, "DELETED", obj))
            self.lock.notify_all()

    def expire_history(self) -> None:
        """Compact: any watch from the current resourceVersion or older now gets 410 Gone."""
        with self.lock:
            self.oldest_rv = self.rv + 1
            self.lock.notify_all()

    # -- HTTP -------------------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as a Go server: no answer waits for the ACK of a previous segment

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send_json(self, status: int, doc: Any) -> None:
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                parsed = urllib.parse.urlparse(self.path)
                query = dict(urllib.parse.parse_qsl(parsed.query))
                fake.requests.append(("GET", self.path, dict(self.headers), b""))
                one = self._one(parsed.path)
                if one is not None:
                    self._send_json(*one)
                    return
                kind = PATHS.get(parsed.path)
                if kind is not None and kind not in ("nodes", "pods") and not fake.serve_dra:
                    kind = None
                if kind is None and parsed.path in fake.documents:
                    self._send_json(200, fake.documents[parsed.path])
                    return
                if kind is None:
                    self._send_json(404, {"kind": "Status", "code": 404, "reason": "NotFound", "message": "no"})
                    return
                if query.get("watch") in ("true", "1"):
                    self._watch(kind, query)
                    return
                with fake.lock:
                    fake.list_count[kind] += 1
                    items = [copy.deepcopy(o) for o in fake.objects[kind].values()]
                    rv = fake.rv
                list_kind = {"nodes": "NodeList", "pods": "PodList"}.get(kind, "List")
                self._send_json(
                    200,
                    {"kind": list_kind, "apiVersion": "v1", "metadata": {"resourceVersion": str(rv)}, "items": items},
                )

            def _one(self, path: str) -> tuple[int, dict[str, Any]] | None:
                """GET /api/v1/nodes/<name> or /api/v1/namespaces/<ns>/pods/<name>; None for other paths."""
                parts = path.strip("/").split("/")
                if parts[:3] == ["api", "v1", "nodes"] and len(parts) == 4:
                    kind, key = "nodes", parts[3]
                elif parts[:3] == ["api", "v1", "namespaces"] and len(parts) == 6 and parts[4] == "pods":
                    kind, key = "pods", f"{parts[3]}/{parts[5]}"
                else:
                    return None
                with fake.lock:
                    found = fake.objects[kind].get(key)
                    if found is not None:
                        return 200, copy.deepcopy(found)
                return 404, _status(404, "NotFound", f'{kind} "{key}" not found')

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _watch(self, kind: str, query: dict[str, str]) -> None:
                since = int(query.get("resourceVersion") or 0)
                deadline = time.time() + min(float(query.get("timeoutSeconds") or 5), 5)
                with fake.lock:
                    fake.watch_count[kind] += 1
                    drop_after = fake.drop_next_watch.pop(kind, None)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                sent = 0
                while time.time() < deadline:
                    with fake.lock:
                        if since < fake.oldest_rv:
                            gone = {
                                "type": "ERROR",
                                "object": {
                                    "kind": "Status",
                                    "apiVersion": "v1",
                                    "metadata": {},
                                    "status": "Failure",
                                    "message": f"too old resource version: {since} ({fake.oldest_rv})",
                                    "reason": "Expired",
                                    "code": 410,
                                },
                            }
                            self._chunk(json.dumps(gone).encode() + b"\n")
                            break
                        # events are kept in resourceVersion order: start after ``since`` without a scan
                        start = bisect.bisect_right(fake.events, since, key=lambda e: e[0])
                        pending = [e for e in fake.events[start:] if e[1] == kind]
                        if not pending:
                            fake.lock.wait(timeout=0.05)
                            continue
                    for rv, _, event_type, obj in pending:
                        if drop_after is not None and sent >= drop_after:
                            self.close_connection = True
                            self.wfile.flush()
                            self.connection.shutdown(2)  # cut mid-stream: no terminating chunk
                            return
                        self._chunk(json.dumps({"type": event_type, "object": obj}).encode() + b"\n")
                        since, sent = rv, sent + 1
                self._chunk(b"")

            def _body(self, method: str) -> dict[str, Any]:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fake.requests.append((method, self.path, dict(self.headers), body))
                doc: dict[str, Any] = json.loads(body)
                return doc

            def do_POST(self) -> None:
                """Bind a pod, or create any other object (a Secret): stored under its collection path and name."""
                doc = self._body("POST")
                parts = urllib.parse.urlparse(self.path).path.strip("/").split("/")
                if len(parts) == 7 and parts[4] == "pods" and parts[6] == "binding":
                    self._send_json(*fake.bind(f"{parts[3]}/{parts[5]}", doc))
                    return
                path = f"{urllib.parse.urlparse(self.path).path}/{doc['metadata']['name']}"
                if path in fake.documents:
                    self._send_json(409, {"kind": "Status", "code": 409, "reason": "AlreadyExists", "message": path})
                    return
                with fake.lock:
                    fake.rv += 1
                    doc["metadata"]["resourceVersion"] = str(fake.rv)
                fake.documents[path] = doc
                self._send_json(201, doc)

            def do_PUT(self) -> None:
                """Replace an object, refused (409) when its resourceVersion is not the stored one."""
                doc = self._body("PUT")
                path = urllib.parse.urlparse(self.path).path
                stored = fake.documents.get(path)
                if stored is None or stored["metadata"].get("resourceVersion") != doc["metadata"].get(
                    "resourceVersion"
                ):
                    self._send_json(409, {"kind": "Status", "code": 409, "reason": "Conflict", "message": path})
                    return
                with fake.lock:
                    fake.rv += 1
                    doc["metadata"]["resourceVersion"] = str(fake.rv)
                fake.documents[path] = doc
                self._send_json(200, doc)

            def do_PATCH(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                fake.requests.append(("PATCH", self.path, dict(self.headers), body))
                path = urllib.parse.urlparse(self.path).path
                if path in fake.documents:
                    if self.headers.get("Content-Type") != "application/json-patch+json":
                        self._send_json(415, {"kind": "Status", "code": 415, "message": "json-patch expected"})
                        return
                    doc = fake.documents[path]
                    for op in json.loads(body):
                        *parents, last = op["path"].split("/")[1:]
                        target: Any = doc
                        for part in parents:
                            target = target[int(part)] if isinstance(target, list) else target[part]
                        target[last] = op["value"]
                    self._send_json(200, doc)
                    return
                parts = path.strip("/").split("/")
                if len(parts) == 6 and parts[4] == "pods":
                    self._send_json(*fake.merge_patch("pods", f"{parts[3]}/{parts[5]}", json.loads(body)))
                else:
                    self._send_json(*fake.merge_patch("nodes", parts[-1], json.loads(body)))

        return Handler
