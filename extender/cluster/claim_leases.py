"""Where the bind verb writes its claims: one ``coordination.k8s.io/v1`` Lease per node, in the advisor's own
namespace, that only the advisor reads and writes.

A claim must be written under an optimistic lock per node (``extender.sources.kube_binder``). The Node's
own resourceVersion served as that lock once, but writing the Node sent the whole Node (tens of kilobytes
with its images) to every Node watcher in the cluster on each share's binding, asked for the right to patch
Nodes, and left an annotation on every node after an uninstall. A Lease is a small object nobody else
watches; its resourceVersion is the same lock, and its ownerReference to the Node lets Kubernetes' garbage
collector delete it with the node.

The claims' text is the one ``extender.cluster.claims.write_claims`` writes, in the Lease's annotation of
the same name as the Node annotation older replicas wrote (still read, for one release: ``counted`` takes
both). Pure: the objects as plain JSON values.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extender.cluster.claims import ANNOTATION_CLAIMS

__all__ = [
    "ANNOTATION_NODE",
    "CLAIMS_COMPONENT",
    "CLAIMS_SELECTOR",
    "ClaimLease",
    "lease_name",
    "lease_object",
    "read_lease",
]

ANNOTATION_NODE = "gpu-advisor.io/node"  # whose claims: a label value could not hold a long node name
CLAIMS_COMPONENT = "gpu-advisor-claims"
_COMPONENT_LABEL = "app.kubernetes.io/component"
CLAIMS_SELECTOR = f"{_COMPONENT_LABEL}={CLAIMS_COMPONENT}"  # what the watch lists: the advisor's Leases only
_PREFIX = "claims-"
_MAX_NAME = 253  # an object name is a DNS subdomain: 253 characters at most, and so is a node's name


@dataclass(frozen=True, slots=True)
class ClaimLease:
    """The claims Lease of one node, as far as the advisor reads it."""

    node: str
    name: str
    resource_version: str
    claims: str  # the claims' text ("" when none)


def lease_name(node: str) -> str:
    """``claims-<node>`` when it fits a name; past 246 characters of node name, a digest of it (node names
    are DNS subdomains already, so the prefix keeps one valid)."""
    if len(_PREFIX) + len(node) <= _MAX_NAME:
        return _PREFIX + node
    return _PREFIX + hashlib.sha256(node.encode()).hexdigest()[:40]


def lease_object(namespace: str, node: str, node_uid: str, claims: str) -> dict[str, Any]:
    """A new claims Lease for ``node``, owned by the Node (no blockOwnerDeletion: a node's deletion never
    waits on it)."""
    owner = {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid}
    meta = {
        "name": lease_name(node),
        "namespace": namespace,
        "labels": {_COMPONENT_LABEL: CLAIMS_COMPONENT},
        "annotations": {ANNOTATION_NODE: node, ANNOTATION_CLAIMS: claims},
        "ownerReferences": [owner] if node_uid else [],
    }
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta, "spec": {}}


def read_lease(obj: Mapping[str, Any]) -> ClaimLease | None:
    """The node a Lease holds claims for, and the claims; None for a Lease the advisor did not write."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    annotations = meta.get("annotations")
    annotations = annotations if isinstance(annotations, Mapping) else {}
    node, name, text = annotations.get(ANNOTATION_NODE), meta.get("name"), annotations.get(ANNOTATION_CLAIMS)
    if not isinstance(node, str) or not node or name != lease_name(node):
        return None
    return ClaimLease(node, name, str(meta.get("resourceVersion") or ""), text if isinstance(text, str) else "")
