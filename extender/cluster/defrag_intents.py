"""Where an applied defragmentation plan sends an owner's next pods: one ``coordination.k8s.io/v1`` Lease per
owner (``defrag-<owner uid>``), in the advisor's claims namespace, beside the claims Leases.

``gpu-advisor defrag --apply`` writes it before each eviction, with the operator's credentials; every
replica reads it through the watch it keeps on its Leases, and ranks the planned node first for the
owner's next pod while that node fits. One Lease per owner rather than an annotation on the destination
node's claims Lease: the claims Lease is the bind verb's optimistic lock, which every intent written there
would break for a binding in flight; it exists only once something was bound there; and the advisor
looks an intent up by the pod's owner, which is this Lease's name.

An intent ends at ``metadata.creationTimestamp`` + ``spec.leaseDurationSeconds``, or once as many pods
of the owner created since then are bound on the planned nodes as the plan moved there. Both times are
the API server's clock (the CLI's may be another's), and the advisor's clock in the cluster keeps to it.
Pure: the objects as plain JSON values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from extender.cluster.claim_leases import CLAIMS_COMPONENT
from extender.cluster.node import parse_time

__all__ = [
    "ANNOTATION_NODES",
    "ANNOTATION_OWNER",
    "DEFRAG_COMPONENT",
    "INTENT_TTL_S",
    "LEASES_SELECTOR",
    "Intent",
    "Owner",
    "controller_of",
    "intent_lease",
    "intent_name",
    "read_intent",
    "still_planned",
]

DEFRAG_COMPONENT = "gpu-advisor-defrag"
_COMPONENT_LABEL = "app.kubernetes.io/component"
# What the advisor's Lease watch lists: its claims, and the intents of applied plans.
LEASES_SELECTOR = f"{_COMPONENT_LABEL} in ({CLAIMS_COMPONENT},{DEFRAG_COMPONENT})"
ANNOTATION_OWNER = "gpu-advisor.io/defrag-owner"  # "ReplicaSet ml/web-7d4": for a person reading the Lease
ANNOTATION_NODES = "gpu-advisor.io/defrag-nodes"  # "b,c": one planned node per move of the owner's pods
INTENT_TTL_S = 600  # long enough for a controller to recreate a pod and kube-scheduler to place it
_PREFIX = "defrag-"


@dataclass(frozen=True, slots=True)
class Owner:
    """A pod's controller: what recreates it after an eviction."""

    kind: str
    namespace: str
    name: str
    uid: str

    @property
    def label(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class Intent:
    """An applied plan's nodes for one owner's next pods, from ``since`` until ``until`` (epoch seconds)."""

    owner_uid: str
    nodes: tuple[str, ...]
    since: float
    until: float


def controller_of(pod: Mapping[str, Any]) -> Owner | None:
    """The pod's controller (the ownerReference marked ``controller``); None for a bare pod or one without uid."""
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    refs = meta.get("ownerReferences")
    for ref in refs if isinstance(refs, list) else []:
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("uid"):
            namespace = str(meta.get("namespace") or "default")
            return Owner(str(ref.get("kind", "")), namespace, str(ref.get("name", "")), str(ref["uid"]))
    return None


def intent_name(owner_uid: str) -> str:
    return _PREFIX + owner_uid  # a uid is 36 characters of [0-9a-f-]: a valid name


def intent_lease(namespace: str, owner: Owner, nodes: Sequence[str], ttl_s: int = INTENT_TTL_S) -> dict[str, Any]:
    """The Lease that sends ``owner``'s next pods to ``nodes`` (one per move, in plan order) for ``ttl_s``."""
    meta = {
        "name": intent_name(owner.uid),
        "namespace": namespace,
        "labels": {_COMPONENT_LABEL: DEFRAG_COMPONENT},
        "annotations": {ANNOTATION_OWNER: owner.label, ANNOTATION_NODES: ",".join(nodes)},
    }
    spec = {"holderIdentity": "gpu-advisor defrag", "leaseDurationSeconds": ttl_s}
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta, "spec": spec}


def read_intent(obj: Mapping[str, Any]) -> Intent | None:
    """The intent a Lease holds; None for any other Lease (a claims Lease, one without a start or nodes)."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name, notes = meta.get("name"), meta.get("annotations")
    notes = notes if isinstance(notes, Mapping) else {}
    if not isinstance(name, str) or not name.startswith(_PREFIX) or ANNOTATION_NODES not in notes:
        return None
    nodes = tuple(n for n in str(notes[ANNOTATION_NODES]).split(",") if n)
    since = parse_time(meta.get("creationTimestamp"))
    spec = obj.get("spec")
    ttl = spec.get("leaseDurationSeconds") if isinstance(spec, Mapping) else None
    if not nodes or since is None or not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0:
        return None
    return Intent(name.removeprefix(_PREFIX), nodes, since, since + ttl)


def still_planned(intent: Intent, used: Counter[str], now: float) -> list[str]:
    """The planned nodes no pod of the owner has used yet, in plan order; none once the intent has ended.
    ``used``: how many of the owner's pods created since the intent are bound on each node."""
    if now >= intent.until:
        return []
    left, out = Counter(used), []
    for node in intent.nodes:
        if left[node] > 0:
            left[node] -= 1
        else:
            out.append(node)
    return out
