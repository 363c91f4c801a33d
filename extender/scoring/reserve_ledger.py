"""The fleet's totals the reserve reads (``reserve``), followed from the cluster model as it changes.

A hold depends on the whole fleet: its free milli, the whole-GPU room of every sharing node and the
GPU pods waiting. Summing 5,000 nodes per filter call would cost more than the call, so the ledger
keeps each node's part and updates only the nodes the model says changed; the room is summed again
only when a renewed mix brings another median whole-GPU pod (at most every 2,048 pods).

Waiting pods are the GPU pods whose last filter call passed no node, by pod key, until one passes
or they are seen bound; a pod deleted while it waits drops out after :data:`WAIT_S`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable, Mapping

from extender.cluster.state import NodeState
from extender.model.gpu_share import MILLI_PER_GPU
from extender.scoring.reserve import Demand, Fleet, room, takes_of

__all__ = ["WAIT_S", "FleetTotals", "Part", "ReserveLedger", "node_part"]

WAIT_S = 600.0  # a waiting pod not heard of again for this long is taken as gone
Part = tuple[tuple[int, ...], int | None, int | None]  # free milli per GPU, free CPU, free memory


def node_part(node: NodeState | None) -> Part | None:
    """The node's part of the totals (None: it offers no readable GPU sharing)."""
    shares = node.shares if node is not None else None
    if node is None or shares is None or shares.problem:
        return None
    return shares.free, node.cpu_free, node.memory_free


class FleetTotals:
    """The sharing GPUs' free milli and capacity and the whole-GPU room, summed over parts kept by node
    (any key: a name in the extender, an index in the replay). A changed node replaces its part; the
    room is summed afresh only for another median whole-GPU pod. Not locked: its owner locks."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self._parts: dict[Hashable, Part] = {}
        self._free = self._capacity = self._room = 0
        self._room_for: Demand | None = None
        self._rooms: dict[Hashable, int] = {}

    def put(self, key: Hashable, part: Part | None) -> None:
        """The node's part now (None: it offers no sharing, or is gone)."""
        old = self._parts.pop(key, None)
        if old is not None:
            self._free -= sum(old[0])
            self._capacity -= len(old[0]) * MILLI_PER_GPU
        if part is not None:
            self._parts[key] = part
            self._free += sum(part[0])
            self._capacity += len(part[0]) * MILLI_PER_GPU
        if self._room_for is not None:
            self._room -= self._rooms.pop(key, 0)
            if part is not None:
                self._room += self._rooms.setdefault(key, room(*part, self._room_for))

    def fleet(self, wants: Demand, waiting_milli: int) -> Fleet:
        """The totals, with the room of ``wants``' median whole-GPU pod."""
        if wants is not self._room_for:
            self._room_for = wants
            self._rooms = {key: room(*part, wants) for key, part in self._parts.items()}
            self._room = sum(self._rooms.values())
        return Fleet(self._free, self._room, waiting_milli, self._capacity)


class ReserveLedger:
    """Free milli, whole-GPU room and waiting milli of the sharing nodes, kept per node."""

    def __init__(self, nodes: Callable[[], Mapping[str, NodeState]]) -> None:
        self._nodes = nodes
        self._lock = threading.Lock()
        self._totals = FleetTotals()
        self._waiting: dict[str, tuple[int, float]] = {}  # pod key → (milli, last heard of)
        self._waiting_milli = 0
        self._takes: dict[tuple[str, tuple[int, int, int]], tuple[NodeState, Demand, bool]] = {}
        self._pruned = float("-inf")
        self.changed(None)

    def changed(self, names: Iterable[str] | None) -> None:
        """The model changed these nodes (None: all of them were replaced)."""
        nodes = self._nodes()
        with self._lock:
            if names is None:
                self._totals.clear()
                names = list(nodes)
            for name in names:
                self._totals.put(name, node_part(nodes.get(name)))

    def fleet(self, wants: Demand, now: float) -> Fleet:
        """The totals, with the room of ``wants``' median whole-GPU pod (summed afresh for a new one)."""
        with self._lock:
            if now - self._pruned > WAIT_S / 10:  # a filter call reads this: prune seldom, not per call
                self._pruned = now
                for key in [key for key, (_, at) in self._waiting.items() if now - at > WAIT_S]:
                    self._forget(key)
            return self._totals.fleet(wants, self._waiting_milli)

    def takes(self, node: NodeState, asked: tuple[int, int, int], wants: Demand) -> bool:
        """``reserve.takes_of``, remembered per node state: while a hold lasts every filter call for a
        share asks it of every node, and only the nodes that changed need asking again."""
        key = (node.name, asked)
        found = self._takes.get(key)
        if found is not None and found[0] is node and found[1] is wants:
            return found[2]
        answer = takes_of(node, asked, wants)
        if len(self._takes) > 200_000:
            self._takes.clear()
        self._takes[key] = (node, wants, answer)
        return answer

    def heard(self, key: str, milli: int, passed: bool, now: float) -> None:
        """A GPU pod's filter call passed some node (it is being placed) or none (it waits)."""
        with self._lock:
            self._forget(key)
            if not passed:
                self._waiting[key] = (milli, now)
                self._waiting_milli += milli

    def _forget(self, key: str) -> None:
        found = self._waiting.pop(key, None)
        if found is not None:
            self._waiting_milli -= found[0]

    def bound(self, keys: Iterable[str]) -> None:
        """These pods are seen running: they wait no longer."""
        with self._lock:
            for key in keys:
                self._forget(key)
