"""The pods the reserve holds now, for the gauge beside the holds counter.

A pod is held now when its last filter call passed no node and the reserve refused it at least one,
it was heard of within :data:`reserve_ledger.WAIT_S` (kube-scheduler retries a pending pod well within
that), it is not seen bound, and its hold limit has not passed. Kept by pod key; one process's view
(each replica counts the pods its own filter calls held).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable

from extender.scoring.reserve_ledger import WAIT_S

__all__ = ["HeldPods"]


class HeldPods:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, tuple[float, float]] = {}  # pod key → (hold ends, last heard of)
        self._by_shape: dict[Hashable, int] = {}  # pod shape → nodes held by its last filter call judged

    def judged(self, shape: Hashable, held: int) -> None:
        """A filter call for a pod of this shape was judged, and the reserve refused it ``held`` nodes:
        a reply kept from it and given again (same shape, candidates and verdicts) holds as many."""
        if len(self._by_shape) > 10_000:
            self._by_shape.clear()
        self._by_shape[shape] = held

    def held_by(self, shape: Hashable) -> int:
        """Nodes held by the last filter call judged for this shape (0: none known)."""
        return self._by_shape.get(shape, 0)

    def heard(self, key: str, held: bool, until: float, now: float) -> None:
        """A filter call for this pod: held (no node passed, the reserve refused some) or not."""
        with self._lock:
            if held:
                if len(self._held) > 100_000:
                    self._held.clear()
                self._held[key] = (until, now)
            else:
                self._held.pop(key, None)

    def bound(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                self._held.pop(key, None)

    def count(self, now: float) -> int:
        with self._lock:
            for key in [k for k, (until, at) in self._held.items() if now >= until or now - at > WAIT_S]:
                del self._held[key]
            return len(self._held)
