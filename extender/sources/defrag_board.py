"""The intents of applied defragmentation plans (``extender.cluster.defrag_intents``) as this replica's Lease
watch has them, and the nodes each still sends its owner's next pod to. Read on the request path: a
lookup by the pod's owner, and nothing at all while no plan is being applied."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from extender.cluster.defrag_intents import Intent, controller_of, read_intent, still_planned

__all__ = ["IntentBoard", "Used"]

# How many pods of an owner (its uid), created at a time or later (epoch seconds), are bound on each node.
Used = Callable[[str, float], Counter[str]]


class IntentBoard:
    def __init__(self) -> None:
        # Replaced whole, never changed in place: a request reads it without a lock.
        self._by_owner: dict[str, Intent] = {}

    def apply(self, kind: str, obj: Mapping[str, Any]) -> None:
        """One watch event for a Lease; any Lease that holds no intent is left alone."""
        intent = read_intent(obj)
        if intent is None:
            return
        board = dict(self._by_owner)
        if kind == "DELETED":
            board.pop(intent.owner_uid, None)
        else:
            board[intent.owner_uid] = intent
        self._by_owner = board

    def replace(self, items: Iterable[Mapping[str, Any]]) -> None:
        """A full list of the Leases."""
        self._by_owner = {i.owner_uid: i for i in map(read_intent, items) if i is not None}

    def planned(self, pod: Mapping[str, Any], used: Used, now: float) -> list[str]:
        """The nodes an applied plan still sends ``pod`` to (its owner's intent), in plan order; [] for none."""
        if not self._by_owner:
            return []
        owner = controller_of(pod)
        intent = self._by_owner.get(owner.uid) if owner is not None else None
        if intent is None or now >= intent.until:
            return []
        return still_planned(intent, used(intent.owner_uid, intent.since), now)

    def sender(self, used: Used, clock: Callable[[], float]) -> Callable[[Mapping[str, Any]], list[str]]:
        """What the served advisor asks of each pod it ranks (``Advisor.planned``)."""
        return lambda pod: self.planned(pod, used, clock())
