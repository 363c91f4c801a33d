"""The Nodes, Pods, DRA objects and claims Leases the API server watch has delivered, and the cluster model
built from them.

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
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from extender.cluster.bound_pods import MALFORMED, Invalid, read_bound_pod
from extender.cluster.containment import contained_node_state
from extender.cluster.dra_view import DraObjects, node_through_slices, pod_through_claims
from extender.cluster.node_facts import NodeFacts, node_facts
from extender.cluster.state import BoundPod, ClusterState, NodeState
from extender.sources.invalid import InvalidObjects
from extender.sources.kube_approved import Approved
from extender.sources.pod_index import PodIndex
from extender.sources.watched_objects import name_of, not_newer, pod_key, slim_or_bare, strip_managed_fields, uid_of

__all__ = ["DRA_RESOURCES", "KubeModel", "strip_managed_fields"]

# resource.k8s.io/v1 plural → the kind its list items are (a list leaves ``kind`` off each item)
DRA_RESOURCES = {
    "resourceslices": "ResourceSlice",
    "resourceclaims": "ResourceClaim",
    "resourceclaimtemplates": "ResourceClaimTemplate",
}


class KubeModel(Approved):
    def __init__(self, state: ClusterState, invalid: InvalidObjects, clock: Callable[[], float] = time.time) -> None:
        self.state = state
        self.invalid = invalid
        self.clock = clock
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, tuple[str, BoundPod]] = {}  # pod uid → (node, pod)
        # The same pods by node (uid → pod, in the order of ``pods``): a binding rebuilds its node from
        # that node's pods, not from a pass over every bound pod (3,000 of them: 5 ms an event).
        self._on_node: dict[str, dict[str, BoundPod]] = {}
        self._facts: dict[str, tuple[Mapping[str, Any], NodeFacts]] = {}  # by node: (the Node object, its facts)
        self.pod_index = PodIndex()  # every bound pod's node and IP, for placing telemetry series
        self.dra: dict[str, dict[str, Mapping[str, Any]]] = {what: {} for what in DRA_RESOURCES}
        # Bound pods that ask through claims, as sent: re-read when a claim or template they name changes.
        self.claim_pods: dict[str, Mapping[str, Any]] = {}
        self.lock = threading.RLock()
        # Placements approved and not yet seen bound (``extender.cluster.claims``): this replica's own,
        # and when each node's counted claims lapse; uids the watch has shown bound, when last seen so.
        Approved.__init__(self)

    def _node_state(self, name: str) -> NodeState:
        return self.node_state(name, self.nodes[name], keep=True)

    def node_state(
        self, name: str, node: Mapping[str, Any], keep: bool = False, written: tuple[Any, ...] | None = None
    ) -> NodeState:
        """``name`` as the Node object ``node`` and the pods bound or approved onto it make it; ``keep``:
        this is the model's own state of it (its problems counted, its claims' lapse followed, and this
        replica's assumptions counted); otherwise only what is bound or claimed at binding (the bind
        verb's view: a pick that has not reached its binding yet does not move where a share goes; its
        claims those of ``written``, the texts it has just read)."""
        pods = list(self._on_node.get(name, {}).values()) + self._claimed(name, node, keep, written)
        kept = node
        # A slice shape dra_view does not foresee: the node as the API server wrote it.
        with contextlib.suppress(Exception):
            node = node_through_slices(node, self.state.dra, self.clock())
        facts = self._facts_of(name, node) if node is kept else None  # a node with DRA GPUs: read anew
        state, problems = contained_node_state(dict(node), pods, self.state.machines, facts)
        if keep:
            self.invalid.update("Node", name, problems)
        return state

    def _facts_of(self, name: str, node: Mapping[str, Any]) -> NodeFacts | None:
        """What this very Node object says of itself (``node_facts``), read once per object: the watch
        puts a new object for every change, and the pods assumed and bound on it rebuild it twice a pod.
        None where it cannot be read (``contained_node_state`` reads it again and says why)."""
        kept = self._facts.get(name)
        if kept is not None and kept[0] is node:
            return kept[1]
        try:
            facts = node_facts(node, self.state.machines)
        except Exception:
            return None
        self._facts[name] = (node, facts)
        return facts

    def _rebuild(self, names: Iterable[str]) -> None:
        for name in names:
            if name in self.nodes:
                self.state.put(self._node_state(name))
            else:
                self._facts.pop(name, None)
                self.state.remove(name)
                self.invalid.update("Node", name, ())

    def set_node(self, kind: str, obj: Mapping[str, Any]) -> None:
        """Apply one watch event for a Node."""
        name = name_of(obj)
        if not name:
            self.invalid.update(
                "Node", "(no name)", (Invalid("Node", "(no name)", MALFORMED, "metadata.name missing"),)
            )
            return
        with self.lock:
            if kind == "DELETED":
                self.nodes.pop(name, None)
            else:
                if kind == "MODIFIED" and not_newer(obj, self.nodes.get(name)):
                    return  # applied already: the bind verb applies its own write's answer at once
                self.nodes[name] = slim_or_bare(obj, name)
            self._rebuild({name})

    def set_pod(self, kind: str, obj: Mapping[str, Any]) -> None:
        """Apply one watch event for a Pod; an unreadable update leaves the pod as it was."""
        uid, key = uid_of(obj), pod_key(obj)
        try:
            self.pod_index.put(kind, obj)
            reading = self._read_pod(obj) if kind != "DELETED" else None
        except Exception as exc:  # a shape read_bound_pod does not foresee: keep what the model had
            self.invalid.update("Pod", key, (Invalid("Pod", key, MALFORMED, f"{type(exc).__name__}: {exc}"[:300]),))
            return
        with self.lock:
            touched = set()
            old = self._pop_pod(uid)
            if old:
                touched.add(old[0])
            if reading is not None and reading.found:
                self._put_pod(uid, reading.found)
                touched.add(reading.found[0])
                assumed_on = self._saw_bound(uid)
                if assumed_on is not None:
                    touched.add(assumed_on)
            self.invalid.update("Pod", key, reading.problems if reading else ())
            self._keep_claim_pod(uid, obj if reading is not None else None)
            self._rebuild(touched)

    def _pop_pod(self, uid: str) -> tuple[str, BoundPod] | None:
        old = self.pods.pop(uid, None)
        if old is not None:
            on_node = self._on_node[old[0]]
            del on_node[uid]
            if not on_node:
                del self._on_node[old[0]]
        return old

    def _put_pod(self, uid: str, found: tuple[str, BoundPod]) -> None:
        self.pods[uid] = found
        self._on_node.setdefault(found[0], {})[uid] = found[1]

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
        key = pod_key(obj)  # namespace/name; slices are cluster-wide, so theirs is default/name
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
            self._pop_pod(uid)
            if reading.found:
                self._put_pod(uid, reading.found)
            touched |= {found[0] for found in (old, reading.found) if found}
        return touched

    def trimmed(self, what: str, items: list[Any]) -> list[Any]:
        """One page of a list, trimmed to what the model keeps before the next page is read: Nodes slimmed
        (``slim_node``), every other object without its ``managedFields``."""
        if what == "nodes":
            return [slim_or_bare(i, name) if isinstance(i, Mapping) and (name := name_of(i)) else i for i in items]
        for item in items:
            strip_managed_fields(item)
        return items

    def replace(self, what: str, items: list[Any]) -> None:
        """A full list of nodes, pods, claims Leases or one DRA kind: the model is rebuilt from it, one contained object
        at a time."""
        objects = [i for i in items if isinstance(i, Mapping)]
        if what == "leases":
            self.replace_leases(objects)
            return
        with self.lock:
            if what in DRA_RESOURCES:
                self.dra[what] = {pod_key(i): i for i in objects}
                self._refresh_dra()
                return
            if what == "nodes":
                self.nodes = {name: slim_or_bare(i, name) for i in objects if (name := name_of(i))}
                self._facts = {}  # every Node object is new: their facts are read as they are rebuilt
                self.invalid.retain("Node", self.nodes)
            else:
                self._replace_pods(objects)
            self.state.replace_all(self._node_state(name) for name in list(self.nodes))

    def _replace_pods(self, objects: list[Mapping[str, Any]]) -> None:
        self.pods = {}
        self._on_node = {}
        self.claim_pods = {}
        seen = []
        for item in objects:
            key = pod_key(item)
            seen.append(key)
            try:
                reading = self._read_pod(item)
            except Exception as exc:  # see set_pod
                self.invalid.update("Pod", key, (Invalid("Pod", key, MALFORMED, f"{type(exc).__name__}: {exc}"[:300]),))
                continue
            self.invalid.update("Pod", key, reading.problems)
            if reading.found:
                self._pop_pod(uid_of(item))  # a list naming one uid twice keeps the last, as the dict did
                self._put_pod(uid_of(item), reading.found)
            self._keep_claim_pod(uid_of(item), item)
        self.invalid.retain("Pod", seen)
        self.pod_index.reset(objects)
