"""ClusterState from the live API server: list + watch of Nodes, Pods, the resource.k8s.io/v1
ResourceSlices, ResourceClaims and ResourceClaimTemplates DRA GPUs are read from, and the claims Leases
every replica's bind verb writes in the advisor's namespace (``extender.cluster.claim_leases``), and there
too the intents of applied defragmentation plans (``extender.cluster.defrag_intents``), with the kubernetes
client.

Objects are kept as the raw JSON the API server sends (the same shapes a snapshot holds), trimmed to
what the advisor reads, and applied one contained object at a time (``extender.sources.kube_model``).
A dropped watch resumes from the last resourceVersion; an expired one (410 Gone) re-lists; failures
are retried with capped exponential backoff and full jitter. All of it runs on background threads:
a request never waits on the API server. How each watch fares is kept in :class:`WatchHealth` (the
``gpu_advisor_watch_*`` metrics and what ``/readyz`` says).

A cluster without the DRA API (404 on resource.k8s.io/v1, or a role that does not grant it: 403) is
"not offered": logged once, read as no DRA objects, and asked again quietly once a watch period.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from extender.cluster.defrag_intents import LEASES_SELECTOR
from extender.cluster.state import BoundPod, ClusterState
from extender.sources.backoff import Backoff
from extender.sources.invalid import InvalidObjects
from extender.sources.kube_model import DRA_RESOURCES, KubeModel, strip_managed_fields
from extender.sources.outage_log import OutageLog
from extender.sources.pod_index import PodIndex
from extender.sources.watch_health import WatchHealth

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["DEFAULT_CLAIMS_NAMESPACE", "LIST_PAGE", "KubeSource"]

log = logging.getLogger(__name__)

_POD_FIELDS = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
# Ready only once each is listed: a replica that has not read the claims Leases could approve what another
# replica has already bound.
RESOURCES = ("nodes", "pods", "leases", *DRA_RESOURCES)
DEFAULT_CLAIMS_NAMESPACE = "gpu-advisor"
# Objects per list request (client-go's reflector asks for 500): a 5,000-node list parsed whole was ~60 MiB
# of objects alive at once, whose freed pages the few kept among them held resident ever after.
LIST_PAGE = 500
# plural → the ResourceV1Api method that lists (and, with watch=True, watches) it in every namespace
_DRA_LISTS = {
    "resourceslices": "list_resource_slice",
    "resourceclaims": "list_resource_claim_for_all_namespaces",
    "resourceclaimtemplates": "list_resource_claim_template_for_all_namespaces",
}


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
        claims_namespace: str = DEFAULT_CLAIMS_NAMESPACE,
    ) -> None:
        self.api = api
        self.claims_namespace = claims_namespace
        self.on_synced = on_synced
        self.state = state
        self.watch_timeout_s = watch_timeout_s
        self.clock = clock
        self.invalid = InvalidObjects(registry)
        self.model = KubeModel(state, self.invalid, clock)
        # A kubernetes client before 34 has no resource.k8s.io/v1 API: DRA is then never offered.
        resource_api = getattr(client, "ResourceV1Api", None)
        api_client = getattr(api, "api_client", None)
        self.dra_api: Any = resource_api(api_client) if resource_api and api_client else None
        self.leases_api: Any = client.CoordinationV1Api(api_client) if api_client else None
        self.not_offered: set[str] = set()  # DRA resources the API server does not serve
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

    def _lister(self, what: str) -> tuple[Callable[..., Any], dict[str, Any]]:
        """The client method that lists and watches ``what``, and the arguments it always takes."""
        if what == "nodes":
            return self.api.list_node, {}
        if what == "pods":
            return self.api.list_pod_for_all_namespaces, {"field_selector": _POD_FIELDS}
        if what == "leases":
            extra = {"namespace": self.claims_namespace, "label_selector": LEASES_SELECTOR}
            return self.leases_api.list_namespaced_lease, extra
        return getattr(self.dra_api, _DRA_LISTS[what]), {}

    def _relist(self, what: str) -> str:
        """List ``what`` in pages of ``LIST_PAGE`` (as client-go's reflector does), each trimmed to what the
        model reads before the next is asked for, and rebuild the model from them; the list's
        resourceVersion, to watch from. A continue token that expired mid-list answers 410: listed anew."""
        self.health.listing(what)
        fn, extra = self._lister(what)
        items: list[Any] = []
        token, rv = "", ""
        while True:
            page = {"limit": LIST_PAGE, "_continue": token} if token else {"limit": LIST_PAGE}
            resp: Any = fn(_preload_content=False, **extra, **page)
            doc = _decoded(resp.data)
            found = doc.get("items") if isinstance(doc, dict) else None
            items += self.model.trimmed(what, found if isinstance(found, list) else [])
            meta = doc.get("metadata") if isinstance(doc, dict) else None
            meta = meta if isinstance(meta, dict) else {}
            rv = str(meta.get("resourceVersion") or "")
            token = meta.get("continue") or ""
            del doc, found
            if not isinstance(token, str) or not token:
                break
        self.model.replace(what, items)
        self.health.listed(what)
        self.outages.answered(what)
        if what in self.not_offered:
            self.not_offered.discard(what)
            log.info("the API server now serves %s: DRA GPUs are read", what)
        self._mark_ready_when_synced()
        log.info("listed %d %s", len(items), what)
        return rv

    # -- the loops -------------------------------------------------------------------------------

    def _watch(self, what: str, rv: str, progress: list[str]) -> None:
        """Stream events from rv until the server ends the watch; ``progress[0]`` follows the last
        resourceVersion applied, so a failure mid-stream resumes after the last good event.

        The stream is read here rather than through ``kubernetes.watch.Watch``: that helper, given raw
        events, fails on the very ERROR event (410 Gone) this loop must act on.
        """
        fn, extra = self._lister(what)
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
                    progress[0] = self._event(what, _decoded(line), progress[0])
        finally:
            resp.close()
            resp.release_conn()
        self.health.contact(what)

    def _event(self, what: str, event: Any, rv: str) -> str:
        """Apply one watch event; returns the resourceVersion to resume after it."""
        event = event if isinstance(event, dict) else {}
        kind, obj = str(event.get("type")), event.get("object")
        obj = obj if isinstance(obj, dict) else {}
        strip_managed_fields(obj)
        if kind == "ERROR":
            raise ApiException(status=obj.get("code"), reason=f"{obj.get('reason')}: {obj.get('message')}")
        meta = obj.get("metadata")
        rv = str((meta if isinstance(meta, dict) else {}).get("resourceVersion") or rv)
        self.health.event(what)
        if kind == "BOOKMARK":
            return rv
        if what == "nodes":
            self.model.set_node(kind, obj)
        elif what == "pods":
            self.model.set_pod(kind, obj)
        elif what == "leases":
            self.model.set_lease(kind, obj)
        else:
            self.model.set_dra(what, kind, obj)
        return rv

    def _mark_ready_when_synced(self) -> None:
        """Ready once every resource is listed, or known not to be offered (a cluster without DRA)."""
        if all(self.health.synced(w) or w in self.not_offered for w in RESOURCES):
            first_sync = not self.state.ready
            self.state.mark_ready(self.clock())
            if first_sync and self.on_synced is not None:
                self.on_synced()

    def _offered_none(self, what: str, why: str) -> None:
        """The DRA API is not served (or not granted): no objects of ``what``, said once, asked again
        after a watch period; the API server did answer, so the watch is not stale."""
        if what not in self.not_offered:
            log.info("the API server does not offer %s (%s): DRA GPUs are not read", what, why)
            self.not_offered.add(what)
            self.model.replace(what, [])
        self.health.not_offered(what)
        self.outages.answered(what)
        self._mark_ready_when_synced()
        self.wait(self.watch_timeout_s)

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
                if what in DRA_RESOURCES and exc.status in (403, 404):
                    rv = None
                    self._offered_none(what, f"{exc.status} {exc.reason}")
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
        if self.dra_api is None:
            log.info("this kubernetes client has no resource.k8s.io/v1: DRA GPUs are not read")
            self.not_offered.update(DRA_RESOURCES)
            for what in DRA_RESOURCES:
                self.health.not_offered(what)
        for what in RESOURCES:
            if what in self.not_offered:
                continue
            thread = threading.Thread(target=self._run, args=(what,), name=f"watch-{what}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()


def _decoded(line: str | bytes) -> Any:
    """One watch event: orjson in C (a fifth of applying a pod's event with ``json``); what it refuses and
    ``json`` reads (an integer past 64 bits, NaN) gets ``json``'s reading, and anything else its error."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)
