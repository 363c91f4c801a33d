"""Raw HTTPS to a real kube-apiserver for ``benchmarks/real_pace.py``: the fake fleet, the pods, and a
watch that records when each pod is bound. Raw requests on kept-alive connections (one per thread)
keep the harness's own CPU small: on a 2-core machine it shares the cores with what it measures."""

from __future__ import annotations

import base64
import http.client
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
import yaml
from prometheus_client.parser import text_string_to_metric_families

GPU = "nvidia.com/gpu"
THREADS = 16


def _file(entry: dict[str, Any], key: str, scratch: Path, name: str) -> str | None:
    """A kubeconfig names a credential by path or carries it inline as base64 (``KEY-data``)."""
    if entry.get(f"{key}-data"):
        path = scratch / name
        path.write_bytes(base64.b64decode(entry[f"{key}-data"]))
        return str(path)
    value = entry.get(key)
    return str(value) if value else None


class Api:
    """The admin kubeconfig's server and client certificate (a token is taken too, if that is what the
    kubeconfig carries)."""

    def __init__(self, kubeconfig: Path, scratch: Path) -> None:
        config = yaml.safe_load(kubeconfig.read_text())
        current = next(c for c in config["contexts"] if c["name"] == config["current-context"])["context"]
        cluster = next(c for c in config["clusters"] if c["name"] == current["cluster"])["cluster"]
        user = next(u for u in config["users"] if u["name"] == current["user"])["user"]
        server = urlsplit(cluster["server"])
        self.host, self.port = server.hostname or "127.0.0.1", server.port or 443
        self.context = ssl.create_default_context(cafile=_file(cluster, "certificate-authority", scratch, "ca.crt"))
        cert = _file(user, "client-certificate", scratch, "client.crt")
        if cert:
            self.context.load_cert_chain(cert, _file(user, "client-key", scratch, "client.key"))
        self.headers = {"Content-Type": "application/json"}
        if user.get("token"):
            self.headers["Authorization"] = f"Bearer {user['token']}"
        self._local = threading.local()

    def connection(self, timeout: float | None = 60) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout)

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        """One request on this thread's kept-alive connection; the decoded answer. A conflict (the object
        is already there) is no error to the harness; any other failure stops it. A kept-alive connection
        the API server closed while idle is opened again once (the request never reached it)."""
        payload = None if body is None else orjson.dumps(body)
        for attempt in (1, 2):
            if getattr(self._local, "conn", None) is None:
                self._local.conn = self.connection()
            conn: http.client.HTTPSConnection = self._local.conn
            try:
                conn.request(method, path, payload, {**self.headers, "Content-Type": content_type})
                answer = conn.getresponse()
                data = answer.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self._local.conn = None
                if attempt == 2:
                    raise
            except (OSError, http.client.HTTPException):
                self._local.conn = None
                raise
        if answer.status >= 300 and answer.status != 409:
            raise RuntimeError(f"{method} {path}: {answer.status} {data[:300]!r}")
        return orjson.loads(data) if data else None


def in_parallel(work: Callable[[Any], object], items: Iterable[Any]) -> None:
    with ThreadPoolExecutor(THREADS) as pool:
        for _ in pool.map(work, items):
            pass


def node(name: str, label: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"real-pace": label}}}


def node_status() -> dict[str, Any]:
    """8 GPUs, 64 CPUs, 512 GiB, Ready: what the fake nodes report through the status subresource."""
    room = {GPU: "8", "cpu": "64", "memory": "512Gi", "pods": "110"}
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now}
    return {"status": {"capacity": room, "allocatable": room, "conditions": [{**ready, "lastTransitionTime": now}]}}


def create_nodes(api: Api, names: list[str], label: str) -> None:
    status = node_status()

    def one(name: str) -> None:
        api.call("POST", "/api/v1/nodes", node(name, label))
        api.call("PATCH", f"/api/v1/nodes/{name}/status", status, "application/merge-patch+json")

    in_parallel(one, names)


def delete_nodes(api: Api, label: str) -> None:
    api.call("DELETE", f"/api/v1/nodes?labelSelector=real-pace%3D{label}")


def pod(name: str, scheduler: str) -> dict[str, Any]:
    """One whole GPU and a tenth of a CPU; extended resources need their limit equal to the request."""
    resources = {"requests": {GPU: "1", "cpu": "100m"}, "limits": {GPU: "1"}}
    container = {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": resources}
    spec = {"schedulerName": scheduler, "automountServiceAccountToken": False, "containers": [container]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def create_namespace(api: Api, namespace: str) -> None:
    """The namespace and its ``default`` ServiceAccount (an API server with the ServiceAccount admission
    plugin on wants it, and no controller-manager may be there to make it)."""
    api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    api.call("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", account)


def create_pods(api: Api, namespace: str, count: int, scheduler: str) -> str:
    """The pods, concurrently; returns the list's resourceVersion to watch from."""
    in_parallel(
        lambda i: api.call("POST", f"/api/v1/namespaces/{namespace}/pods", pod(f"p{i:05d}", scheduler)), range(count)
    )
    listed = api.call("GET", f"/api/v1/namespaces/{namespace}/pods?limit=1")
    return str(listed["metadata"]["resourceVersion"])


def delete_pods(api: Api, namespace: str) -> None:
    """Deleted at once (grace 0): no kubelet would confirm a graceful deletion of a bound pod, so the
    nodes would stay full. Returns once the namespace lists no pod."""
    options = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
    api.call("DELETE", f"/api/v1/namespaces/{namespace}/pods", options)
    for _ in range(600):
        if not api.call("GET", f"/api/v1/namespaces/{namespace}/pods?limit=1")["items"]:
            return
        time.sleep(0.5)
    raise SystemExit(f"the pods of {namespace} are still there 300 s after their deletion")


class BindWatch:
    """Watches one namespace's pods and records, per pod, when its ``spec.nodeName`` was first seen."""

    def __init__(self, api: Api, namespace: str, resource_version: str) -> None:
        self.bound: dict[str, float] = {}
        self.error: BaseException | None = None
        self._api, self._namespace, self._version = api, namespace, resource_version
        self._closed = False
        self._conn, self._answer = self._open()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _open(self) -> tuple[Any, Any]:
        conn = self._api.connection(timeout=None)
        path = f"/api/v1/namespaces/{self._namespace}/pods?watch=1&resourceVersion={self._version}"
        conn.request("GET", path, headers={k: v for k, v in self._api.headers.items() if k != "Content-Type"})
        answer = conn.getresponse()
        if answer.status != 200:
            raise RuntimeError(f"watch {self._namespace}: {answer.status}")
        return conn, answer

    def _run(self) -> None:
        """Read events; when the API server ends the watch, watch again from the last version seen (a
        version too old to resume from ends the harness with that error)."""
        try:
            while not self._closed:
                while line := self._answer.readline():
                    event = orjson.loads(line)
                    pod_object = event["object"]
                    if event["type"] == "ERROR":
                        raise RuntimeError(f"watch error: {pod_object.get('message')}")
                    self._version = pod_object["metadata"].get("resourceVersion", self._version)
                    if event["type"] in ("ADDED", "MODIFIED") and pod_object["spec"].get("nodeName"):
                        self.bound.setdefault(pod_object["metadata"]["name"], time.monotonic())
                if not self._closed:
                    self._conn, self._answer = self._open()
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            if not self._closed:
                self.error = exc

    def wait(self, expected: int, stall_seconds: float, on_stall: Callable[[], str]) -> list[float]:
        """The bind times once ``expected`` pods are bound; stops the harness if none was bound for
        ``stall_seconds``, with ``on_stall()`` (what kube-scheduler said) in the message."""
        last_count, last_change = -1, time.monotonic()
        while len(self.bound) < expected:
            if self.error is not None or not self._thread.is_alive():
                raise SystemExit(f"the pods watch ended after {len(self.bound)} bindings: {self.error}")
            if len(self.bound) != last_count:
                last_count, last_change = len(self.bound), time.monotonic()
            elif time.monotonic() - last_change > stall_seconds:
                raise SystemExit(
                    f"{len(self.bound)}/{expected} pods bound, none for {stall_seconds:.0f} s:\n{on_stall()}"
                )
            time.sleep(0.05)
        return sorted(self.bound.values())

    def close(self) -> None:
        """Shut the socket down rather than close the connection: closing waits for the reading
        thread's lock, which a watch that is still open never gives up."""
        self._closed = True
        if self._conn.sock is not None:
            self._conn.sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=10)


def request_counts(api: Api) -> dict[str, float]:
    """kube-apiserver's requests so far by verb, resource and subresource (``apiserver_request_total``)."""
    conn = api.connection()
    conn.request("GET", "/metrics", None, api.headers)
    text = conn.getresponse().read().decode()
    conn.close()
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples if family.name == "apiserver_request" else ():
            if sample.name == "apiserver_request_total":
                key = " ".join(sample.labels.get(k, "") for k in ("verb", "resource", "subresource")).strip()
                counts[key] = counts.get(key, 0.0) + sample.value
    return counts
