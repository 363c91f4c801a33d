"""An HTTP-level stand-in for kube-apiserver on 127.0.0.1: enough of /api/v1 for nodes and pods, of
coordination.k8s.io/v1 for the Leases of a namespace, and (with ``serve_dra``) of resource.k8s.io/v1 for
ResourceSlices, ResourceClaims and ResourceClaimTemplates.

It speaks what the real server speaks to the real ``kubernetes`` client: lists with a
``resourceVersion`` (and a namespace and ``labelSelector``), watches as chunked streams of JSON lines
(``ADDED``/``MODIFIED``/``DELETED``/``BOOKMARK``), a 410 Gone ``ERROR`` event for an expired
resourceVersion, merge-patches on nodes and Leases (refused with 409 Conflict when the patch names a
resourceVersion that is not the object's, as the real server does), creates (409 AlreadyExists) and
updates (409 Conflict on a stale resourceVersion, 404 when gone) and deletes of Leases, reads of one node,
pod or Lease, ``pods/<name>/binding`` (409 when the pod is bound already) and ``pods/<name>/eviction`` (429
for the pods a test names, as for a PodDisruptionBudget). Every write is counted by the resource RBAC
names (``writes``). Tests script trouble: drop the next watch connection mid-stream, or expire history.
"""

from __future__ import annotations

import bisect
import copy
import json
import threading
import time
import urllib.parse
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.api_paths import PATHS, Collection, collection, one_object, written_resource
from tests.fakes.apiserver_writes import Writes
from tests.fakes.kube_objects import node, pod
from tests.fakes.kube_objects import status as _status

__all__ = ["FakeApiServer", "node", "pod"]

_CLUSTER_WIDE = ("nodes", "resourceslices")
_SERVED_ALWAYS = ("nodes", "pods", "leases")  # the rest only with serve_dra
_LIST_KINDS = {
    "nodes": ("NodeList", "v1"),
    "pods": ("PodList", "v1"),
    "leases": ("LeaseList", "coordination.k8s.io/v1"),
}


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
        self.pages: Counter[str] = Counter()  # list requests by kind, each page counted (list_count: whole lists)
        self.bindings: list[tuple[str, str]] = []  # (namespace/name, node) in the order they were bound
        self.evictions: list[str] = []  # namespace/name of each pod evicted, in order
        self.budget_forbids: set[str] = set()  # pods whose eviction answers 429, as a PodDisruptionBudget would
        self.conflicts = 0  # writes refused for a stale resourceVersion, or a Lease created twice
        self.forbidden: set[str] = set()  # kinds whose list and watch answer 403, as RBAC without a grant
        self.writes: Counter[str] = Counter()  # writes received, by resource as RBAC names it (pods/binding)
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
                listed = collection(parsed.path, query)
                if listed is not None and listed.kind not in _SERVED_ALWAYS and not fake.serve_dra:
                    listed = None
                if listed is not None and listed.kind in fake.forbidden:
                    self._send_json(403, _status(403, "Forbidden", f"cannot list resource {listed.kind!r}"))
                    return
                if listed is None and parsed.path in fake.documents:
                    self._send_json(200, fake.documents[parsed.path])
                    return
                if listed is None:
                    self._send_json(404, {"kind": "Status", "code": 404, "reason": "NotFound", "message": "no"})
                    return
                if query.get("watch") in ("true", "1"):
                    self._watch(listed, query)
                    return
                token = query.get("continue") or ""
                with fake.lock:
                    fake.pages[listed.kind] += 1
                    if not token:
                        fake.list_count[listed.kind] += 1  # lists, not their pages
                    elif int(token.split(":")[0]) < fake.oldest_rv:  # its resourceVersion compacted away
                        self._send_json(410, _status(410, "Expired", "the provided continue parameter is too old"))
                        return
                    items = [copy.deepcopy(o) for o in fake.objects[listed.kind].values() if listed.holds(o)]
                    rv = int(token.split(":")[0]) if token else fake.rv
                list_kind, api_version = _LIST_KINDS.get(listed.kind, ("List", "v1"))
                meta = {"resourceVersion": str(rv)}
                if query.get("limit"):  # a page, as kube-apiserver serves it; its token says where the next starts
                    start, limit = int(token.split(":")[1]) if token else 0, int(query["limit"])
                    if start + limit < len(items):
                        meta["continue"] = f"{rv}:{start + limit}"
                    items = items[start : start + limit]
                self._send_json(200, {"kind": list_kind, "apiVersion": api_version, "metadata": meta, "items": items})

            def _one(self, path: str) -> tuple[int, dict[str, Any]] | None:
                """GET of one node, pod or Lease; None for other paths."""
                named = one_object(path)
                if named is None:
                    return None
                kind, key = named
                with fake.lock:
                    found = fake.objects[kind].get(key)
                    if found is not None:
                        return 200, copy.deepcopy(found)
                return 404, _status(404, "NotFound", f'{kind} "{key.split("/")[-1]}" not found')

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _watch(self, listed: Collection, query: dict[str, str]) -> None:
                kind = listed.kind
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
                            why = f"too old resource version: {since} ({fake.oldest_rv})"
                            gone = {"type": "ERROR", "object": {**_status(410, "Expired", why), "metadata": {}}}
                            self._chunk(json.dumps(gone).encode() + b"\n")
                            break
                        # events are kept in resourceVersion order: start after ``since`` without a scan
                        start = bisect.bisect_right(fake.events, since, key=lambda e: e[0])
                        pending = [e for e in fake.events[start:] if e[1] == kind and listed.holds(e[3])]
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
                fake.writes[written_resource(self.path)] += 1
                doc: dict[str, Any] = json.loads(body)
                return doc

            def do_POST(self) -> None:
                """Bind a pod, or create any other object (a Secret): stored under its collection path and name."""
                doc = self._body("POST")
                parts = urllib.parse.urlparse(self.path).path.strip("/").split("/")
                if len(parts) == 7 and parts[4] == "pods" and parts[6] in ("binding", "eviction"):
                    write = fake.bind if parts[6] == "binding" else fake.evict
                    self._send_json(*write(f"{parts[3]}/{parts[5]}", doc))
                    return
                listed = collection(urllib.parse.urlparse(self.path).path, {})
                if listed is not None and listed.kind == "leases" and listed.namespace:
                    self._send_json(*fake.create("leases", listed.namespace, doc))
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
                named = one_object(path)
                if named is not None:
                    self._send_json(*fake.update(*named, doc))
                    return
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

            def do_DELETE(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fake.requests.append(("DELETE", self.path, dict(self.headers), b""))
                fake.writes[written_resource(self.path)] += 1
                named = one_object(urllib.parse.urlparse(self.path).path)
                self._send_json(*(fake.remove(*named) if named else (404, _status(404, "NotFound", self.path))))

            def do_PATCH(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                fake.requests.append(("PATCH", self.path, dict(self.headers), body))
                fake.writes[written_resource(self.path)] += 1
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
                named = one_object(path) or ("nodes", path.strip("/").split("/")[-1])
                self._send_json(*fake.merge_patch(*named, json.loads(body)))

        return Handler
