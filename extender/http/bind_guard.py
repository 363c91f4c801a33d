"""Whether the bind verb may bind what it is asked to: only what kube-scheduler itself would bind.

The bind verb creates Bindings with the advisor's own credentials, so it is the most privileged door the
advisor has. kube-scheduler binds a pod only when the pod is of one of its profiles, its own filter plugins
passed the node (``nodeName``, ``nodeSelector``, required node affinity, taints, a cordon), and, since the
printed extender entry is not ignorable, this extender's filter passed it in the same scheduling cycle
(and prioritize ranked it, when more than one node passed). So a binding is refused, with the reason, and
the pod left Pending (kube-scheduler forgets it and places it again) when:

1. ``scheduler``: the pod's ``schedulerName`` is not a profile that consults this advisor;
2. ``node-unknown`` / ``constraints``: the node is not in the model, or the pod's own constraints exclude it;
3. ``not-approved``: no filter or prioritize answer of this replica passed that pod on that node within the
   assume window (``CLAIM_TTL_S``).

The constraints are read from the Pod kube-scheduler sent to filter (it comes over the same client
certificate as the bind); a pod never filtered here is read from the API server, so that the refusal
names the constraint it breaks rather than only "not approved".

Approvals are this replica's: kube-scheduler's calls for one pod reach one replica when the Service keeps
a client on one endpoint (``sessionAffinity: ClientIP`` in the manifests). A bind that reaches another
replica (a failover between filter and bind) is refused as not approved and the pod is placed again.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from extender.cluster.claims import CLAIM_TTL_S
from extender.cluster.selectors import node_admits
from extender.cluster.state import NodeState

__all__ = ["REASONS", "Approval", "ApprovalLog", "Refusal", "constraints_of", "constraints_refusal", "pod_uid"]

REASONS = ("scheduler", "node-unknown", "constraints", "not-approved", "pod-unknown", "failed")
_MOST = 50_000  # approvals kept at most: a few thousand a minute at kube-scheduler's pace
_WHOLE = 256  # approvals that keep every node they passed, newest first (seconds of kube-scheduler's cycles)
_CONSTRAINTS = ("schedulerName", "nodeName", "nodeSelector", "affinity", "tolerations")
_DEFAULT = "default-scheduler"


@dataclass(frozen=True, slots=True)
class Refusal:
    reason: str  # one of REASONS: the metric's label
    message: str


@dataclass(frozen=True, slots=True)
class Approval:
    """One answer's approval of a pod: the node it picked, and the nodes it passed (a prioritize call's
    candidates, or a filter reply, read only when the binding names a node other than the pick)."""

    spec: Mapping[str, Any]  # the Pod's spec as kube-scheduler sent it
    at: float
    pick: str | None = None
    candidates: Sequence[str] | None = None
    filter_reply: bytes | None = None

    def covers(self, node: str) -> bool:
        if node == self.pick:
            return True
        if self.candidates is not None and node in self.candidates:
            return True
        return self.filter_reply is not None and node in _passed(self.filter_reply)


class ApprovalLog:
    """The approvals of the last ``window_s`` seconds, by pod uid; the newest of a pod replaces the older.

    Only the newest ``whole`` keep what they passed besides their pick (a filter reply of 5,000 names is
    ~100 KB): kube-scheduler binds right after its cycle, and an older approval still covers its pick."""

    def __init__(self, window_s: float = CLAIM_TTL_S, whole: int = _WHOLE) -> None:
        self.window_s, self.whole = window_s, whole
        self._by_uid: OrderedDict[str, Approval] = OrderedDict()
        self._heavy: deque[tuple[str, Approval]] = deque()

    def keep(self, uid: str, approval: Approval) -> None:
        if not uid:
            return
        self._by_uid.pop(uid, None)
        self._by_uid[uid] = approval
        self._heavy.append((uid, approval))
        if len(self._heavy) > self.whole:
            old_uid, old = self._heavy.popleft()
            if self._by_uid.get(old_uid) is old:  # still that pod's approval: keep its pick alone
                self._by_uid[old_uid] = replace(old, candidates=None, filter_reply=None)
        while self._by_uid and (
            len(self._by_uid) > _MOST or approval.at - next(iter(self._by_uid.values())).at > self.window_s
        ):
            self._by_uid.popitem(last=False)

    def get(self, uid: str, now: float) -> Approval | None:
        found = self._by_uid.get(uid)
        return found if found is not None and now - found.at <= self.window_s else None


def constraints_of(spec: Any) -> dict[str, Any]:
    """What of a pod's spec decides where kube-scheduler may bind it (kept, not the whole spec)."""
    return {k: spec[k] for k in _CONSTRAINTS if k in spec} if isinstance(spec, Mapping) else {}


def pod_uid(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata")
    return str(meta.get("uid") or "") if isinstance(meta, Mapping) else ""


def constraints_refusal(
    spec: Mapping[str, Any], node_name: str, node: NodeState | None, schedulers: frozenset[str]
) -> Refusal | None:
    """Why kube-scheduler would not bind a pod of this spec onto this node (None: it may)."""
    scheduler = str(spec.get("schedulerName") or _DEFAULT)
    if scheduler not in schedulers:
        consults = ", ".join(sorted(schedulers))
        return Refusal(
            "scheduler", f"the pod is for scheduler {scheduler}, which does not consult the advisor ({consults})"
        )
    if node is None:
        return Refusal("node-unknown", f"node {node_name} does not exist (not in the advisor's model)")
    bound_to = spec.get("nodeName")
    if bound_to and bound_to != node_name:
        return Refusal("constraints", f"the pod names node {bound_to} (spec.nodeName)")
    why = node_admits(node, spec)
    if why:
        return Refusal("constraints", f"node {node_name}: {why}")
    return None


def _passed(reply: bytes) -> frozenset[str]:
    """The node names a filter reply passed: ``NodeNames``, or the names of its ``Nodes`` items."""
    try:
        doc = orjson.loads(reply)
    except orjson.JSONDecodeError:
        return frozenset()
    names = doc.get("NodeNames") if isinstance(doc, dict) else None
    if isinstance(names, list):
        return frozenset(str(n) for n in names)
    nodes = doc.get("Nodes") if isinstance(doc, dict) else None
    items = nodes.get("items") if isinstance(nodes, dict) else None
    return frozenset(str((i.get("metadata") or {}).get("name", "")) for i in items or [] if isinstance(i, dict))
