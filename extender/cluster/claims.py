"""Placements the advisor has approved that the API server does not show yet: counted as taken.

kube-scheduler binds asynchronously and keeps its own cache of pods it has assumed onto nodes; it counts
no annotation share, no per-GPU memory, no HAMi core. Between the advisor's answer and the moment its
watch shows the binding, the node still looks as it did, and a second pod could be approved onto the
GPU the first one is about to take. So a placement the advisor chose counts as taken until the API
server shows where the pod went, or a short time passes (as kube-scheduler's ``AssumePod`` /
``ForgetPod``).

Two kinds, one shape (:class:`Claim`):

- **assumed here**: this replica's own picks (prioritize's top node, or the one node a filter passed:
  kube-scheduler then skips prioritize), kept in this process;
- **claimed for the node**: what any replica's bind verb wrote into the node's claims Lease (annotation
  ``gpu-advisor.io/claims``, ``extender.cluster.claim_leases``) under the Lease's resourceVersion (an
  optimistic lock), so a second replica sees the first one's bindings as soon as its watch has the Lease,
  and two binds on one node are serialised by the API server. Replicas before the Lease wrote the same
  text onto the Node's annotation of that name; it is still read, for one release.

Pure: the pod objects are kept trimmed to what :func:`extender.cluster.bound_pods.read_bound_pod` reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from extender.cluster.shares import ALIBABA_INDEX, GpuShares, request_milli, take_gpus
from extender.model.pods import PodRequest

__all__ = [
    "ANNOTATION_CLAIMS",
    "CLAIM_TTL_S",
    "Binding",
    "Claim",
    "Claims",
    "assignment",
    "claim_object",
    "counted",
    "node_annotation",
    "read_claims",
    "write_claims",
]

ANNOTATION_CLAIMS = "gpu-advisor.io/claims"
# Long enough for any binding to reach every replica's watch (milliseconds in a healthy cluster), short
# enough that a pod deleted before its binding does not hold its GPU for long.
CLAIM_TTL_S = 30.0
_MAX_CLAIMS = 256  # per node: a node takes a few pods a second at most; past it the oldest go first
_DROPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)


@dataclass(frozen=True, slots=True)
class Binding:
    """kube-scheduler's ExtenderBindingArgs: which pod goes to which node."""

    name: str
    namespace: str
    uid: str
    node: str


@dataclass(frozen=True, slots=True)
class Claim:
    uid: str
    node: str
    pod: Mapping[str, Any]  # trimmed Pod object (``claim_object``), spec.nodeName set to ``node``
    at: float  # epoch seconds when the placement was approved

    def live(self, now: float, ttl: float = CLAIM_TTL_S) -> bool:
        return now - self.at < ttl


def claim_object(pod: Mapping[str, Any], node: str) -> dict[str, Any]:
    """What of a Pod decides the GPUs, CPU and memory it holds, placed on ``node``."""
    meta = _mapping(pod.get("metadata"))
    spec = _mapping(pod.get("spec"))
    annotations = {str(k): v for k, v in _mapping(meta.get("annotations")).items() if k not in _DROPPED_ANNOTATIONS}
    kept_meta = {k: meta[k] for k in ("name", "namespace", "uid") if k in meta}
    kept_spec: dict[str, Any] = {k: spec[k] for k in ("priority", "overhead", "resourceClaims") if k in spec}
    for part in ("containers", "initContainers"):
        items = spec.get(part)
        if isinstance(items, list):
            kept_spec[part] = [
                {k: c[k] for k in ("name", "resources", "restartPolicy") if k in c}
                for c in items
                if isinstance(c, Mapping)
            ]
    return {"metadata": {**kept_meta, "annotations": annotations}, "spec": {**kept_spec, "nodeName": node}}


# The last text read per node and its claims: a node is rebuilt on every pod event, so each text is read
# once. Only a node's current text is kept: a cache of every text seen held each node's earlier texts too
# (every binding on a node writes a new one), 19 MiB of decoded claims at 5,000 nodes after 2,000 shares.
_LAST_READ: dict[str, tuple[str, tuple[Claim, ...]]] = {}
_LAST_READ_NODES = 65_536  # a bound, should node names come and go: past it, read afresh


def read_claims(node: str, text: Any) -> list[Claim]:
    """The claims a claims text holds; an unreadable text or entry holds none (the next bind on the node
    writes it afresh)."""
    if not isinstance(text, str) or not text:
        return []
    last = _LAST_READ.get(node)
    if last is not None and last[0] == text:
        return list(last[1])
    claims = _read_claims(node, text)
    if len(_LAST_READ) >= _LAST_READ_NODES:
        _LAST_READ.clear()
    _LAST_READ[node] = (text, claims)
    return list(claims)


def _read_claims(node: str, text: str) -> tuple[Claim, ...]:
    try:
        doc = json.loads(text)
    except ValueError:
        return ()
    entries = doc.get("claims") if isinstance(doc, Mapping) else None
    found = []
    for entry in entries if isinstance(entries, list) else ():
        entry = _mapping(entry)
        uid, at, pod = entry.get("uid"), entry.get("at"), entry.get("pod")
        if isinstance(uid, str) and uid and isinstance(at, int | float) and isinstance(pod, Mapping):
            found.append(Claim(uid, node, {**pod, "spec": {**_mapping(pod.get("spec")), "nodeName": node}}, float(at)))
    return tuple(found)


def node_annotation(node: Mapping[str, Any]) -> Any:
    """The claims' text a replica from before the claims Lease wrote on the Node itself, if any."""
    annotations = _mapping(_mapping(node.get("metadata")).get("annotations"))
    return annotations.get(ANNOTATION_CLAIMS)


def write_claims(claims: Iterable[Claim]) -> str:
    """The claims' text (a Lease's annotation): the newest claims, oldest first."""
    kept = sorted(claims, key=lambda c: c.at)[-_MAX_CLAIMS:]
    entries = [{"uid": c.uid, "at": round(c.at, 3), "pod": dict(c.pod)} for c in kept]
    return json.dumps({"version": 1, "claims": entries}, separators=(",", ":"))


def counted(
    node: str, written: Iterable[Any], assumed: Iterable[Claim], seen: Mapping[str, Any], now: float
) -> list[Claim]:
    """The claims that count on ``node`` now: those of each text written for it (its Lease's, and the Node
    annotation an older replica wrote) and this replica's own, newest per pod, live, and of pods the
    watch has not shown bound yet (``seen``: their uids)."""
    newest: dict[str, Claim] = {}
    for claim in (*(c for text in written for c in read_claims(node, text)), *assumed):
        if claim.uid in seen or not claim.live(now):
            continue
        if claim.uid not in newest or newest[claim.uid].at < claim.at:
            newest[claim.uid] = claim
    return sorted(newest.values(), key=lambda c: c.at)


class Claims:
    """This replica's assumed placements, by pod uid (one node each: a pod placed again moves)."""

    def __init__(self) -> None:
        self._by_uid: dict[str, Claim] = {}

    def __len__(self) -> int:
        return len(self._by_uid)

    def get(self, uid: str) -> Claim | None:
        return self._by_uid.get(uid)

    def put(self, claim: Claim) -> str | None:
        """Keep ``claim``; the node the pod was assumed on before, if any."""
        old = self._by_uid.pop(claim.uid, None)
        self._by_uid[claim.uid] = claim  # at the end: the dict stays oldest first
        return old.node if old is not None else None

    def drop(self, uid: str) -> str | None:
        """Forget the pod's claim; the node it was on, if any."""
        old = self._by_uid.pop(uid, None)
        return old.node if old is not None else None

    def on(self, node: str) -> list[Claim]:
        return [c for c in self._by_uid.values() if c.node == node]

    def lapsing(self, now: float, ttl: float = CLAIM_TTL_S) -> bool:
        """Has any claim outlived ``ttl``? (Claims are kept oldest first: the first one tells.)"""
        first = next(iter(self._by_uid.values()), None)
        return first is not None and not first.live(now, ttl)

    def expire(self, now: float, ttl: float = CLAIM_TTL_S) -> set[str]:
        """Drop the claims older than ``ttl``; the nodes they were on."""
        nodes = set()
        while self._by_uid:
            claim = next(iter(self._by_uid.values()))
            if claim.live(now, ttl):
                break
            del self._by_uid[claim.uid]
            nodes.add(claim.node)
        return nodes


def assignment(request: PodRequest, shares: GpuShares | None) -> dict[str, str]:
    """The annotation that records which GPUs a share in the Alibaba convention is bound to: best fit, as
    the convention's own scheduler assigns them, on the node as it is promised now. Recorded on the pod
    before its binding, it fixes the GPU for every reader (the device plugin, every replica's model) and
    no longer depends on the order in which bindings happen to be read back. Empty for anything else
    (whole GPUs are handed out by their device plugin)."""
    share = request.share
    if share is None or share.convention != "alibaba" or shares is None:
        return {}
    # A record the pod already carries is overwritten: it came from an earlier binding of it that did not
    # happen (to this node or another), and only the binder writes it.
    memory = shares.memory_mib[0] if shares.memory_mib else None
    gpus = take_gpus(shares.free, request_milli(share, memory), request.gpus)
    if len(gpus) < request.gpus:
        return {}
    return {ALIBABA_INDEX: "-".join(str(g) for g in gpus)}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
