"""Placements approved and not yet seen bound, in the live model (``extender.cluster.claims``): this replica's
own picks (assumed), the claims every replica wrote for each node (its Lease, ``extender.cluster.claim_leases``;
the Node's annotation, from replicas before the Lease), and when they lapse. A part of ``KubeModel``."""

from __future__ import annotations

import dataclasses
import heapq
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from extender.cluster.bound_pods import read_bound_pod
from extender.cluster.claim_leases import ClaimLease, read_lease
from extender.cluster.claims import CLAIM_TTL_S, Claim, Claims, claim_object, counted, node_annotation
from extender.cluster.state import BoundPod
from extender.sources.defrag_board import IntentBoard

__all__ = ["Approved"]


class Approved:
    """What ``KubeModel`` keeps of approved placements; it provides the nodes, pods, lock and rebuild."""

    nodes: dict[str, dict[str, Any]]
    pods: dict[str, tuple[str, BoundPod]]
    lock: threading.RLock
    clock: Callable[[], float]
    _rebuild: Callable[[Iterable[str]], None]

    def __init__(self) -> None:
        self.assumed = Claims()
        self._lapse: dict[str, float] = {}
        self._lapses: list[tuple[float, str]] = []  # (when, node), a heap; stale entries skipped
        self._seen: dict[str, float] = {}  # uids the watch showed bound, oldest first
        self.leases: dict[str, ClaimLease] = {}  # each node's claims Lease, by node name
        self.intents = IntentBoard()  # applied defragmentation plans' intents, from the same watch

    def set_lease(self, kind: str, obj: Mapping[str, Any]) -> None:
        """Apply one watch event for a claims Lease: only its node is rebuilt."""
        lease = read_lease(obj)
        if lease is None:  # an applied defragmentation plan's intent, or nothing the advisor reads
            self.intents.apply(kind, obj)
            return
        with self.lock:
            kept = self.leases.get(lease.node)
            if kind == "DELETED":
                if kept is not None and kept.name == lease.name:
                    del self.leases[lease.node]
            elif kind == "MODIFIED" and kept is not None and _not_newer(lease, kept):
                return  # applied already: the bind verb applies its own write's answer at once
            else:
                self.leases[lease.node] = lease
            self._rebuild({lease.node} & self.nodes.keys())

    def replace_leases(self, items: Iterable[Mapping[str, Any]]) -> None:
        """A full list of the claims Leases: the nodes whose claims changed are rebuilt."""
        items = list(items)
        self.intents.replace(items)
        found = {lease.node: lease for item in items if (lease := read_lease(item)) is not None}
        with self.lock:
            old, self.leases = self.leases, found
            changed = {n for n in old.keys() | found.keys() if old.get(n) != found.get(n)}
            self._rebuild(changed & self.nodes.keys())

    def _saw_bound(self, uid: str) -> str | None:
        """The watch shows ``uid`` bound: no claim on it counts any more; the node it was assumed on."""
        self._seen.pop(uid, None)
        self._seen[uid] = self.clock()
        return self.assumed.drop(uid)

    def _claimed(
        self, name: str, node: Mapping[str, Any], keep: bool, written: tuple[Any, ...] | None = None
    ) -> list[BoundPod]:
        """The pods approved onto ``name`` that the watch has not shown bound: they hold what they ask;
        ``written``: the claims' texts to count (default: as the watch has them)."""
        now = self.clock()
        written = self.written(name, node) if written is None else written
        claims = counted(name, written, self.assumed.on(name) if keep else (), self._seen, now)
        found = []
        for claim in claims:
            if claim.uid not in self.pods and (held := _held(claim)) is not None:
                found.append(held)
        if keep and claims:
            at = min(c.at for c in claims) + CLAIM_TTL_S
            if self._lapse.get(name) != at:
                self._lapse[name] = at
                heapq.heappush(self._lapses, (at, name))
        elif keep:
            self._lapse.pop(name, None)
        return found

    def written(self, name: str, node: Mapping[str, Any]) -> tuple[Any, ...]:
        """The claims' texts written for ``name``: its Lease's as the watch has it, and the annotation a
        replica from before the Lease wrote on the Node (read for one release after the upgrade, never written)."""
        lease = self.leases.get(name)
        return (lease.claims if lease is not None else None, node_annotation(node))

    def assume(self, pod: Mapping[str, Any], node: str) -> None:
        """Count ``pod`` on ``node`` from now until the watch shows where it went (or the claim lapses)."""
        uid = _uid(pod)
        with self.lock:
            self._seen.pop(uid, None)
            old = self.assumed.put(Claim(uid, node, claim_object(pod, node), self.clock()))
            self._rebuild({n for n in (node, old) if n in self.nodes})

    def forget(self, pod: Mapping[str, Any]) -> None:
        """``pod`` is being placed again: whatever this replica assumed of it no longer holds."""
        uid = _uid(pod)
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


def _not_newer(lease: ClaimLease, kept: ClaimLease) -> bool:
    """The same resourceVersion, or (both etcd revision numbers, as every API server writes them) an older
    one: a watch event the bind verb's own write has already moved past."""
    new, old = lease.resource_version, kept.resource_version
    if lease.name != kept.name or not new or not old:
        return False
    return new == old or (new.isdigit() and old.isdigit() and int(new) < int(old))


def _uid(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}")


_HELD: dict[tuple[str, float, str], BoundPod | None] = {}


def _held(claim: Claim) -> BoundPod | None:
    """What a claimed pod holds on its node (read once per claim: it is read again on every rebuild of the
    node while it lives); None when nothing, or a shape not foreseen (another replica's claim)."""
    key = (claim.uid, claim.at, claim.node)
    if key not in _HELD:
        if len(_HELD) > 50_000:
            _HELD.clear()
        try:
            reading = read_bound_pod(claim.pod).found
        except Exception:
            reading = None
        _HELD[key] = dataclasses.replace(reading[1], bound_at=claim.at) if reading is not None else None
    return _HELD[key]
