"""The Nodes, Pods and DRA objects the API server watch has delivered, and the cluster model built from them.

Every object is applied on its own and contained: whatever one Node or Pod holds, applying it never
raises to the watch (which would replay the same event forever) and never stops a list from
finishing (which would keep the model from ever becoming ready). What could not be read is counted
in ``gpu_advisor_invalid_objects`` and logged once (``extender.sources.invalid``).

DRA GPUs are seen through ``extender.cluster.dra_view`` as a snapshot sees them: a node's slices give
it ``nvidia.com/gpu`` and a free report (the devices no allocated claim holds), a pod's claims give it
its count. A slice or claim event rebuilds only the nodes whose devices or holders changed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import heapq
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from extender.cluster.bound_pods import MALFORMED, Invalid, read_bound_pod
from extender.cluster.claims import ANNOTATION_CLAIMS, CLAIM_TTL_S, Claim, Claims, claim_object, counted
from extender.cluster.containment import contained_node_state
from extender.cluster.dra_view import DraObjects, node_through_slices, pod_through_claims
from extender.cluster.state import BoundPod, ClusterState, NodeState
from extender.sources.invalid import InvalidObjects
from extender.sources.kube import slim_node
from extender.sources.pod_index import PodIndex

__all__ = ["DRA_RESOURCES", "KubeModel"]

# resource.k8s.io/v1 plural → the kind its list items are (a list leaves ``kind`` off each item)
DRA_RESOURCES = {
    "resourceslices": "ResourceSlice",
    "resourceclaims": "ResourceClaim",
    "resourceclaimtemplates": "ResourceClaimTemplate",
}


class KubeModel:
    def __init__(self, state: ClusterState, invalid: InvalidObjects, clock: Callable[[], float] = time.time) -> None:
        self.state = state
        self.invalid = invalid
        self.clock = clock
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, tuple[str, BoundPod]] = {}  # pod uid → (node, pod)
        self.pod_index = PodIndex()  # every bound pod's node and IP, for placing telemetry series
        self.dra: dict[str, dict[str, Mapping[str, Any]]] = {what: {} for what in DRA_RESOURCES}
        # Bound pods that ask through claims, as sent: re-read when a claim or template they name changes.
        self.claim_pods: dict[str, Mapping[str, Any]] = {}
        self.lock = threading.RLock()
        # Placements approved and not yet seen bound (``extender.cluster.claims``): this replica's own,
        # and when each node's counted claims lapse; uids the watch has shown bound, when last seen so.
        self.assumed = Claims()
        self._lapse: dict[str, float] = {}
        self._lapses: list[tuple[float, str]] = []  # (when, node), a heap; stale entries skipped
        self._seen: dict[str, float] = {}  # oldest first: a pod seen again moves to the end

    def _claimed(self, name: str, node: Mapping[str, Any], keep: bool) -> list[BoundPod]:
        """The pods approved onto ``name`` that the watch has not shown bound: they hold what they ask."""
        now = self.clock()
        annotations = _meta(node).get("annotations")
        text = annotations.get(ANNOTATION_CLAIMS) if isinstance(annotations, Mapping) else None
        claims = counted(name, text, self.assumed.on(name) if keep else (), self._seen, now)
        found = []
        for claim in claims:
            if claim.uid in self.pods:
                continue
            try:
                reading = read_bound_pod(claim.pod).found
            except Exception:  # a claim another replica wrote in a shape not foreseen: it holds nothing
                continue
            if reading is not None:
                found.append(dataclasses.replace(reading[1], bound_at=claim.at))
        if keep and claims:
            at = min(c.at for c in claims) + CLAIM_TTL_S
            if self._lapse.get(name) != at:
                self._lapse[name] = at
                heapq.heappush(self._lapses, (at, name))
        elif keep:
            self._lapse.pop(name, None)
        return found

    def assume(self, pod: Mapping[str, Any], node: str) -> None:
        """Count ``pod`` on ``node`` from now until the watch shows where it went (or the claim lapses)."""
        uid = _uid(pod) or _pod_key(pod)
        with self.lock:
            self._seen.pop(uid, None)
            old = self.assumed.put(Claim(uid, node, claim_object(pod, node), self.clock()))
            self._rebuild({n for n in (node, old) if n in self.nodes})

    def forget(self, pod: Mapping[str, Any]) -> None:
        """``pod`` is being placed again: whatever this replica assumed of it no longer holds."""
        uid = _uid(pod) or _pod_key(pod)
        if self.assumed.get(uid) is None:
            return
        with self.lock:
            old = self.assumed.drop(uid)
            self._rebuild({old} if old in self.nodes else set())

    def sweep(self) -> None:
        """Rebuild the nodes whose counted claims have lapsed."""
        now = self.clock()
        if not (self._lapses and self._lapses[0][0] <= now) and not self.assumed.lapsing(now):
            return
        with self.lock:
            lapsed = self.assumed.expire(now)
            while self._lapses and self._lapses[0][0] <= now:
                at, name = heapq.heappop(self._lapses)
                if self._lapse.get(name) == at:
                    lapsed.add(name)
            while self._seen and now - next(iter(self._seen.values())) > 2 * CLAIM_TTL_S:
                del self._seen[next(iter(self._seen))]
            self._rebuild(lapsed & self.nodes.keys())

    def _node_state(self, name: str) -> NodeState:
        return self.node_state(name, self.nodes[name], keep=True)

    def node_state(self, name: str, node: Mapping[str, Any], keep: bool = False) -> NodeState:
        """``name`` as the Node object ``node`` and the pods bound or approved onto it make it; ``keep``:
        this is the model's own state of it (its problems counted, its claims' lapse followed, and this
        replica's assumptions counted); otherwise only what is bound or claimed at binding (the bind
        verb's view: a pick that has not reached its binding yet does not move where a share goes)."""
        pods = [p for where, p in self.pods.values() if where == name] + self._claimed(name, node, keep)
        # A slice shape dra_view does not foresee: the node as the API server wrote it.
        with contextlib.suppress(Exception):
            node = node_through_slices(node, self.state.dra, self.clock())
        state, problems = contained_node_state(dict(node), pods, self.state.machines)
        if keep:
            self.invalid.update("Node", name, problems)
        return state

    def _rebuild(self, names: Iterable[str]) -> None:
        for name in names:
            if name in self.nodes:
                self.state.put(self._node_state(name))
            else:
                self.state.remove(name)
                self.invalid.update("Node", name, ())

    def set_node(self, kind: str, obj: Mapping[str, Any]) -> None:
        """Apply one watch event for a Node."""
        name = _name(obj)
        if not name:
            self.invalid.update(
                "Node", "(no name)", (Invalid("Node", "(no name)", MALFORMED, "metadata.name missing"),)
            )
            return
        with self.lock:
            if kind == "DELETED":
                self.nodes.pop(name, None)
            else:
                self.nodes[name] = _slim_or_bare(obj, name)
            self._rebuild({name})

    def set_pod(self, kind: str, obj: Mapping[str, Any]) -> None:
        """Apply one watch event for a Pod; an unreadable update leaves the pod as it was."""
        uid, key = _uid(obj), _pod_key(obj)
        try:
            self.pod_index.put(kind, obj)
            reading = self._read_pod(obj) if kind != "DELETED" else None
        except Exception as exc:  # a shape read_bound_pod does not foresee: keep what the model had
            self.invalid.update("Pod", key, (Invalid("Pod", key, MALFORMED, f"{type(exc).__name__}: {exc}"[:300]),))
            return
        with self.lock:
            touched = set()
            old = self.pods.pop(uid, None)
            if old:
                touched.add(old[0])
            if reading is not None and reading.found:
                self.pods[uid] = reading.found
                touched.add(reading.found[0])
                self._seen.pop(uid, None)
                self._seen[uid] = self.clock()  # where it went is known: no claim on it counts any more
                assumed_on = self.assumed.drop(uid)
                if assumed_on is not None:
                    touched.add(assumed_on)
            self.invalid.update("Pod", key, reading.problems if reading else ())
            self._keep_claim_pod(uid, obj if reading is not None else None)
            self._rebuild(touched)

    def _read_pod(self, obj: Mapping[str, Any]) -> Any:
        return read_bound_pod(pod_through_claims(obj, self.state.dra))

    def _keep_claim_pod(self, uid: str, obj: Mapping[str, Any] | None) -> None:
        spec = obj.get("spec") if obj is not None else None
        if obj is not None and isinstance(spec, Mapping) and spec.get("resourceClaims"):
            self.claim_pods[uid] = obj
        else:
            self.claim_pods.pop(uid, None)

    def set_dra(self, what: str, kind: str, obj: Mapping[str, Any]) -> None:
        """Apply one watch event for a ResourceSlice, ResourceClaim or ResourceClaimTemplate."""
        key = _pod_key(obj)  # namespace/name; slices are cluster-wide, so theirs is default/name
        with self.lock:
            if kind == "DELETED":
                self.dra[what].pop(key, None)
            else:
                self.dra[what][key] = obj
            self._refresh_dra()

    def _refresh_dra(self) -> None:
        """Read the DRA objects anew and rebuild the nodes whose GPUs, holders or claim pods changed."""
        old = self.state.dra
        items = ({**o, "kind": DRA_RESOURCES[what]} for what, objs in self.dra.items() for o in objs.values())
        try:
            new = DraObjects.read(items)
        except Exception as exc:  # contained like any object: the model keeps the DRA view it had
            problem = Invalid("DRA", "(objects)", MALFORMED, f"{type(exc).__name__}: {exc}"[:300])
            self.invalid.update("DRA", "(objects)", (problem,))
            return
        self.invalid.update("DRA", "(objects)", ())
        self.state.dra = new
        touched = {
            name
            for name in {*old.gpus, *new.gpus, *old.held, *new.held}
            if (old.gpus.get(name), old.held.get(name), old.allocated_at.get(name))
            != (new.gpus.get(name), new.held.get(name), new.allocated_at.get(name))
        }
        if (old.claims, old.templates) != (new.claims, new.templates):
            touched |= self._reread_claim_pods()
        self._rebuild(touched & self.nodes.keys())

    def _reread_claim_pods(self) -> set[str]:
        """The nodes of pods whose GPU count changed with the claims they name."""
        touched = set()
        for uid, obj in self.claim_pods.items():
            try:
                reading = self._read_pod(obj)
            except Exception:  # see set_pod: the pod stays as it was read
                continue
            old = self.pods.get(uid)
            if reading.found == old:
                continue
            self.pods.pop(uid, None)
            if reading.found:
                self.pods[uid] = reading.found
            touched |= {found[0] for found in (old, reading.found) if found}
        return touched

    def replace(self, what: str, items: list[Any]) -> None:
        """A full list of nodes, pods or one DRA kind: the model is rebuilt from it, one contained object
        at a time."""
        objects = [i for i in items if isinstance(i, Mapping)]
        with self.lock:
            if what in DRA_RESOURCES:
                self.dra[what] = {_pod_key(i): i for i in objects}
                self._refresh_dra()
                return
            if what == "nodes":
                self.nodes = {name: _slim_or_bare(i, name) for i in objects if (name := _name(i))}
                self.invalid.retain("Node", self.nodes)
            else:
                self._replace_pods(objects)
            self.state.replace_all(self._node_state(name) for name in list(self.nodes))

    def _replace_pods(self, objects: list[Mapping[str, Any]]) -> None:
        self.pods = {}
        self.claim_pods = {}
        seen = []
        for item in objects:
            key = _pod_key(item)
            seen.append(key)
            try:
                reading = self._read_pod(item)
            except Exception as exc:  # see set_pod
                self.invalid.update("Pod", key, (Invalid("Pod", key, MALFORMED, f"{type(exc).__name__}: {exc}"[:300]),))
                continue
            self.invalid.update("Pod", key, reading.problems)
            if reading.found:
                self.pods[_uid(item)] = reading.found
            self._keep_claim_pod(_uid(item), item)
        self.invalid.retain("Pod", seen)
        self.pod_index.reset(objects)


def _slim_or_bare(obj: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The trimmed Node; one whose fields are of the wrong shape keeps its name only (no GPUs)."""
    try:
        return slim_node(dict(obj))
    except (AttributeError, TypeError, ValueError):
        return {"metadata": {"name": name, "labels": {}, "annotations": {}}, "spec": {}, "status": {}}


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _name(obj: Mapping[str, Any]) -> str:
    name = _meta(obj).get("name")
    return name if isinstance(name, str) else ""


def _uid(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("uid") or "")


def _pod_key(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
