"""ClusterState from the live API server: list + watch of Nodes and Pods with the kubernetes client.

Objects are kept as the raw JSON the API server sends (the same shapes a snapshot holds), trimmed to
what the advisor reads. A dropped watch resumes from the last resourceVersion; an expired one
(410 Gone) re-lists. All of it runs on background threads: a request never waits on the API server.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from extender.cluster.state import BoundPod, ClusterState, bound_pod, node_state
from extender.sources.kube import slim_node
from extender.sources.pod_index import PodIndex

__all__ = ["KubeSource"]

log = logging.getLogger(__name__)

_POD_FIELDS = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"


class KubeSource:
    def __init__(
        self,
        api: Any,  # kubernetes.client.CoreV1Api
        state: ClusterState,
        watch_timeout_s: int = 300,
        backoff_s: float = 1.0,
        clock: Callable[[], float] = time.time,
        on_synced: Callable[[], None] | None = None,
    ) -> None:
        self.api = api
        self.on_synced = on_synced
        self.state = state
        self.watch_timeout_s = watch_timeout_s
        self.backoff_s = backoff_s
        self.clock = clock
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, tuple[str, BoundPod]] = {}  # pod uid → (node, pod)
        self.pod_index = PodIndex()  # every bound pod's node and IP, for placing telemetry series
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._synced = {"nodes": False, "pods": False}
        self._threads: list[threading.Thread] = []
        self.relists = {"nodes": 0, "pods": 0}

    # -- applying objects -----------------------------------------------------------------------

    def _rebuild(self, names: set[str]) -> None:
        for name in names:
            raw = self.nodes.get(name)
            if raw is None:
                self.state.remove(name)
                continue
            pods = [p for node, p in self.pods.values() if node == name]
            self.state.put(node_state(raw, pods, self.state.machines))

    def _set_node(self, kind: str, obj: dict[str, Any]) -> None:
        name = str((obj.get("metadata") or {}).get("name", ""))
        with self._lock:
            if kind == "DELETED":
                self.nodes.pop(name, None)
            else:
                self.nodes[name] = slim_node(obj)
            self._rebuild({name})

    def _set_pod(self, kind: str, obj: dict[str, Any]) -> None:
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        self.pod_index.put(kind, obj)
        with self._lock:
            touched = set()
            old = self.pods.pop(uid, None)
            if old:
                touched.add(old[0])
            found = bound_pod(obj) if kind != "DELETED" else None
            if found:
                self.pods[uid] = found
                touched.add(found[0])
            self._rebuild(touched)

    def _relist(self, what: str) -> str:
        resp: Any = (
            self.api.list_node(_preload_content=False)
            if what == "nodes"
            else self.api.list_pod_for_all_namespaces(field_selector=_POD_FIELDS, _preload_content=False)
        )
        doc = json.loads(resp.data)
        items = doc.get("items") or []
        with self._lock:
            if what == "nodes":
                self.nodes = {str(i["metadata"]["name"]): slim_node(i) for i in items}
            else:
                self.pod_index.reset(items)
                self.pods = {}
                for item in items:
                    found = bound_pod(item)
                    if found:
                        self.pods[str(item["metadata"].get("uid") or "")] = found
            self.state.replace_all(
                node_state(raw, [p for node, p in self.pods.values() if node == name], self.state.machines)
                for name, raw in self.nodes.items()
            )
            first_sync = not self.state.ready
            self._synced[what] = True
            if all(self._synced.values()):
                self.state.mark_ready(self.clock())
                if first_sync and self.on_synced is not None:
                    self.on_synced()
        self.relists[what] += 1
        log.info("listed %d %s", len(items), what)
        return str((doc.get("metadata") or {}).get("resourceVersion") or "")

    # -- the loops -------------------------------------------------------------------------------

    def _watch(self, what: str, rv: str) -> str:
        """Stream events from rv until the server ends the watch; returns the last resourceVersion.

        The stream is read here rather than through ``kubernetes.watch.Watch``: that helper, given raw
        events, fails on the very ERROR event (410 Gone) this loop must act on.
        """
        fn = self.api.list_node if what == "nodes" else self.api.list_pod_for_all_namespaces
        extra = {} if what == "nodes" else {"field_selector": _POD_FIELDS}
        resp: Any = fn(
            watch=True,
            resource_version=rv,
            timeout_seconds=self.watch_timeout_s,
            allow_watch_bookmarks=True,
            _preload_content=False,
            _request_timeout=self.watch_timeout_s + 30,
            **extra,
        )
        try:
            for line in iter_resp_lines(resp):  # type: ignore[no-untyped-call]
                if self._stop.is_set():
                    break
                if not line:
                    continue
                event = json.loads(line)
                kind, obj = str(event.get("type")), event.get("object") or {}
                if kind == "ERROR":
                    code = obj.get("code")
                    raise ApiException(status=code, reason=f"{obj.get('reason')}: {obj.get('message')}")
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                if kind == "BOOKMARK":
                    continue
                if what == "nodes":
                    self._set_node(kind, obj)
                else:
                    self._set_pod(kind, obj)
        finally:
            resp.close()
            resp.release_conn()
        return rv

    def _run(self, what: str) -> None:
        rv: str | None = None
        while not self._stop.is_set():
            try:
                if rv is None:
                    rv = self._relist(what)
                rv = self._watch(what, rv)
            except ApiException as exc:
                if exc.status == 410:
                    log.info("%s watch expired (410 Gone): re-listing", what)
                    rv = None
                    continue
                log.warning(
                    "%s: API server answered %s %s; retrying in %.0f s", what, exc.status, exc.reason, self.backoff_s
                )
                rv = None if exc.status in (401, 403, 404) else rv
                self._stop.wait(self.backoff_s)
            except Exception as exc:  # dropped connections, timeouts, bad chunks: resume from rv
                log.warning("%s watch interrupted (%s); resuming from resourceVersion %s", what, exc, rv)
                self._stop.wait(self.backoff_s)

    def start(self) -> None:
        for what in ("nodes", "pods"):
            thread = threading.Thread(target=self._run, args=(what,), name=f"watch-{what}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
