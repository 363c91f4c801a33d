"""Placements approved and not yet seen bound, in the live model (``extender.cluster.claims``): this replica's
own picks (assumed), the claims on each Node's annotation, and when they lapse. A part of ``KubeModel``."""

from __future__ import annotations

import dataclasses
import heapq
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from extender.cluster.bound_pods import read_bound_pod
from extender.cluster.claims import ANNOTATION_CLAIMS, CLAIM_TTL_S, Claim, Claims, claim_object, counted
from extender.cluster.state import BoundPod

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

    def _saw_bound(self, uid: str) -> str | None:
        """The watch shows ``uid`` bound: no claim on it counts any more; the node it was assumed on."""
        self._seen.pop(uid, None)
        self._seen[uid] = self.clock()
        return self.assumed.drop(uid)

    def _claimed(self, name: str, node: Mapping[str, Any], keep: bool) -> list[BoundPod]:
        """The pods approved onto ``name`` that the watch has not shown bound: they hold what they ask."""
        now = self.clock()
        meta = node.get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
        text = annotations.get(ANNOTATION_CLAIMS) if isinstance(annotations, Mapping) else None
        claims = counted(name, text, self.assumed.on(name) if keep else (), self._seen, now)
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
