"""ClusterState from the live API server: list + watch of Nodes and Pods with the kubernetes client.

Objects are kept as the raw JSON the API server sends (the same shapes a snapshot holds), trimmed to
what the advisor reads, and applied one contained object at a time (``extender.sources.kube_model``).
A dropped watch resumes from the last resourceVersion; an expired one (410 Gone) re-lists; failures
are retried with capped exponential backoff and full jitter. All of it runs on background threads:
a request never waits on the API server. How each watch fares is kept in :class:`WatchHealth` (the
``gpu_advisor_watch_*`` metrics and what ``/readyz`` says).
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from extender.cluster.state import BoundPod, ClusterState
from extender.sources.backoff import Backoff
from extender.sources.invalid import InvalidObjects
from extender.sources.kube_model import KubeModel
from extender.sources.outage_log import OutageLog
from extender.sources.pod_index import PodIndex
from extender.sources.watch_health import WatchHealth

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["KubeSource"]

log = logging.getLogger(__name__)

_POD_FIELDS = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
RESOURCES = ("nodes", "pods")


class KubeSource:
    def __init__(
        self,
        api: Any,  # kubernetes.client.CoreV1Api
        state: ClusterState,
        watch_timeout_s: int = 300,
        backoff_s: float = 1.0,
        clock: Callable[[], float] = time.time,
        on_synced: Callable[[], None] | None = None,
        registry: CollectorRegistry | None = None,
        backoff_cap_s: float = 60.0,
        rng: random.Random | None = None,
    ) -> None:
        self.api = api
        self.on_synced = on_synced
        self.state = state
        self.watch_timeout_s = watch_timeout_s
        self.clock = clock
        self.invalid = InvalidObjects(registry)
        self.model = KubeModel(state, self.invalid)
        rng = rng or random.Random()
        self.backoffs = {what: Backoff(backoff_s, max(backoff_cap_s, backoff_s), rng) for what in RESOURCES}
        # Silent past two whole watch periods (each ends by the server's timeout at the latest): unready.
        self.health = WatchHealth(RESOURCES, clock, stale_after_s=2 * (watch_timeout_s + 30), registry=registry)
        self.health.invalid = self.invalid
        state.source_health = self.health
        self.wait: Callable[[float], object] = self._stop_wait
        self.outages = OutageLog(log, clock)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # The object store, for readers that predate KubeModel.
    @property
    def nodes(self) -> dict[str, dict[str, Any]]:
        return self.model.nodes

    @property
    def pods(self) -> dict[str, tuple[str, BoundPod]]:
        return self.model.pods

    @property
    def pod_index(self) -> PodIndex:
        return self.model.pod_index

    @property
    def relists(self) -> dict[str, int]:
        return self.health.relists

    def _stop_wait(self, seconds: float) -> object:
        return self._stop.wait(seconds)

    def _relist(self, what: str) -> str:
        self.health.listing(what)
        resp: Any = (
            self.api.list_node(_preload_content=False)
            if what == "nodes"
            else self.api.list_pod_for_all_namespaces(field_selector=_POD_FIELDS, _preload_content=False)
        )
        doc = json.loads(resp.data)
        items = doc.get("items") if isinstance(doc, dict) else None
        items = items if isinstance(items, list) else []
        self.model.replace(what, items)
        self.health.listed(what)
        self.outages.answered(what)
        if all(self.health.synced(w) for w in RESOURCES):
            first_sync = not self.state.ready
            self.state.mark_ready(self.clock())
            if first_sync and self.on_synced is not None:
                self.on_synced()
        log.info("listed %d %s", len(items), what)
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        return str((meta or {}).get("resourceVersion") or "")

    # -- the loops -------------------------------------------------------------------------------

    def _watch(self, what: str, rv: str, progress: list[str]) -> None:
        """Stream events from rv until the server ends the watch; ``progress[0]`` follows the last
        resourceVersion applied, so a failure mid-stream resumes after the last good event.

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
        self.health.watching(what)
        self.outages.answered(what)
        try:
            for line in iter_resp_lines(resp):  # type: ignore[no-untyped-call]
                if self._stop.is_set():
                    break
                if line:
                    progress[0] = self._event(what, json.loads(line), progress[0])
        finally:
            resp.close()
            resp.release_conn()
        self.health.contact(what)

    def _event(self, what: str, event: Any, rv: str) -> str:
        """Apply one watch event; returns the resourceVersion to resume after it."""
        event = event if isinstance(event, dict) else {}
        kind, obj = str(event.get("type")), event.get("object")
        obj = obj if isinstance(obj, dict) else {}
        if kind == "ERROR":
            raise ApiException(status=obj.get("code"), reason=f"{obj.get('reason')}: {obj.get('message')}")
        meta = obj.get("metadata")
        rv = str((meta if isinstance(meta, dict) else {}).get("resourceVersion") or rv)
        self.health.event(what)
        if kind == "BOOKMARK":
            return rv
        if what == "nodes":
            self.model.set_node(kind, obj)
        else:
            self.model.set_pod(kind, obj)
        return rv

    def _run(self, what: str) -> None:
        rv: str | None = None
        backoff = self.backoffs[what]
        while not self._stop.is_set():
            try:
                if rv is None:
                    rv = self._relist(what)
                progress = [rv]
                try:
                    self._watch(what, rv, progress)
                finally:
                    rv = progress[0]
                backoff.reset()
            except ApiException as exc:
                if exc.status == 410:
                    log.info("%s watch expired (410 Gone): re-listing", what)
                    rv = None
                    continue
                rv = None if exc.status in (401, 403, 404) else rv
                self._retry(what, f"API server answered {exc.status} {exc.reason}", str(exc.status))
            except Exception as exc:  # dropped connections, timeouts, bad chunks: resume from rv
                self._retry(what, f"watch interrupted ({type(exc).__name__}: {exc})", type(exc).__name__)

    def _retry(self, what: str, why: str, cause: str) -> None:
        wait = self.backoffs[what].next_wait()
        self.health.failed(what, why)
        self.outages.failed(what, cause, why, wait)
        self.wait(wait)

    def start(self) -> None:
        for what in RESOURCES:
            thread = threading.Thread(target=self._run, args=(what,), name=f"watch-{what}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
