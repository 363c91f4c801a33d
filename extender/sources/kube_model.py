"""The Nodes and Pods the API server watch has delivered, and the cluster model built from them.

Every object is applied on its own and contained: whatever one Node or Pod holds, applying it never
raises to the watch (which would replay the same event forever) and never stops a list from
finishing (which would keep the model from ever becoming ready). What could not be read is counted
in ``gpu_advisor_invalid_objects`` and logged once (``extender.sources.invalid``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from extender.cluster.bound_pods import MALFORMED, Invalid, read_bound_pod
from extender.cluster.containment import contained_node_state
from extender.cluster.state import BoundPod, ClusterState, NodeState
from extender.sources.invalid import InvalidObjects
from extender.sources.kube import slim_node
from extender.sources.pod_index import PodIndex

__all__ = ["KubeModel"]


class KubeModel:
    def __init__(self, state: ClusterState, invalid: InvalidObjects) -> None:
        self.state = state
        self.invalid = invalid
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, tuple[str, BoundPod]] = {}  # pod uid → (node, pod)
        self.pod_index = PodIndex()  # every bound pod's node and IP, for placing telemetry series
        self.lock = threading.Lock()

    def _node_state(self, name: str) -> NodeState:
        pods = [p for node, p in self.pods.values() if node == name]
        state, problems = contained_node_state(self.nodes[name], pods, self.state.machines)
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
            reading = read_bound_pod(obj) if kind != "DELETED" else None
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
            self.invalid.update("Pod", key, reading.problems if reading else ())
            self._rebuild(touched)

    def replace(self, what: str, items: list[Any]) -> None:
        """A full list of nodes or pods: the model is rebuilt from it, one contained object at a time."""
        objects = [i for i in items if isinstance(i, Mapping)]
        with self.lock:
            if what == "nodes":
                self.nodes = {name: _slim_or_bare(i, name) for i in objects if (name := _name(i))}
                self.invalid.retain("Node", self.nodes)
            else:
                self._replace_pods(objects)
            self.state.replace_all(self._node_state(name) for name in list(self.nodes))

    def _replace_pods(self, objects: list[Mapping[str, Any]]) -> None:
        self.pods = {}
        seen = []
        for item in objects:
            key = _pod_key(item)
            seen.append(key)
            try:
                reading = read_bound_pod(item)
            except Exception as exc:  # see set_pod
                self.invalid.update("Pod", key, (Invalid("Pod", key, MALFORMED, f"{type(exc).__name__}: {exc}"[:300]),))
                continue
            self.invalid.update("Pod", key, reading.problems)
            if reading.found:
                self.pods[_uid(item)] = reading.found
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
