"""Which objects a request to the fake API server names: the collections it serves, one object's path, and
a list's or watch's namespace and label selector, read as the real server reads them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["PATHS", "Collection", "collection", "one_object", "written_resource"]

_DRA = "/apis/resource.k8s.io/v1/"
_LEASES = ("apis", "coordination.k8s.io", "v1")
PATHS = {
    "/api/v1/nodes": "nodes",
    "/api/v1/pods": "pods",
    **{_DRA + plural: plural for plural in ("resourceslices", "resourceclaims", "resourceclaimtemplates")},
    "/apis/coordination.k8s.io/v1/leases": "leases",
}


@dataclass(frozen=True)
class Collection:
    """A list or watch: of which kind, in which namespace (None: every one), which labels."""

    kind: str
    namespace: str | None = None
    selector: str = ""

    def holds(self, obj: dict[str, Any]) -> bool:
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace", "default") != self.namespace:
            return False
        return _selected(meta.get("labels") or {}, self.selector)


def collection(path: str, query: dict[str, str]) -> Collection | None:
    """The collection a GET lists or watches: the cluster-wide paths, and a namespace's Leases."""
    selector = query.get("labelSelector", "")
    if path in PATHS:
        return Collection(PATHS[path], None, selector)
    parts = path.strip("/").split("/")
    if tuple(parts[:3]) == _LEASES and len(parts) == 6 and parts[3] == "namespaces" and parts[5] == "leases":
        return Collection("leases", parts[4], selector)
    return None


def one_object(path: str) -> tuple[str, str] | None:
    """(kind, key) of ``/api/v1/nodes/<name>``, ``/api/v1/namespaces/<ns>/pods/<name>`` or a namespace's
    Lease; None for other paths."""
    parts = path.strip("/").split("/")
    if parts[:3] == ["api", "v1", "nodes"] and len(parts) == 4:
        return "nodes", parts[3]
    if parts[:3] == ["api", "v1", "namespaces"] and len(parts) == 6 and parts[4] == "pods":
        return "pods", f"{parts[3]}/{parts[5]}"
    if tuple(parts[:3]) == _LEASES and len(parts) == 7 and parts[3] == "namespaces" and parts[5] == "leases":
        return "leases", f"{parts[4]}/{parts[6]}"
    return None


def written_resource(path: str) -> str:
    """What a write's path writes, as RBAC names it: ``nodes``, ``pods``, ``pods/binding``, ``leases``,
    ``secrets`` …"""
    parts = path.split("?")[0].strip("/").split("/")
    if "namespaces" in parts:
        rest = parts[parts.index("namespaces") + 2 :]
    else:
        rest = parts[3:] if parts[0] == "apis" else parts[2:]
    if len(rest) >= 3:
        return f"{rest[0]}/{rest[2]}"  # a subresource
    return rest[0] if rest else ""


def _selected(labels: dict[str, str], selector: str) -> bool:
    """A label selector: ``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``, ``k in (a,b)``, ``k notin (a,b)``,
    joined by commas (outside the parentheses)."""
    for term in filter(None, (t.strip() for t in re.split(r",(?![^(]*\))", selector))):
        if (found := re.fullmatch(r"(\S+)\s+(in|notin)\s+\((.*)\)", term)) is not None:
            key, op, values = found[1], found[2], {v.strip() for v in found[3].split(",")}
            ok = (labels.get(key) in values) == (op == "in")
        elif "!=" in term:
            key, value = term.split("!=", 1)
            ok = labels.get(key.strip()) != value.strip()
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            ok = labels.get(key.strip()) == value.strip()
        elif term.startswith("!"):
            ok = term[1:] not in labels
        else:
            ok = term in labels
        if not ok:
            return False
    return True
