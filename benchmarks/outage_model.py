"""What a run of the outage check left bound, counted as the real cluster check counts it.

A node is over-committed when its bound pods' ``gpu-count × gpu-milli`` exceed its GPUs × 1000, or when
its pods, packed best-fit in bind order onto its GPUs (each pod's GPUs on the fullest GPUs that still
hold its milli), leave a pod with no GPU that can hold it. Unallocated: the GPU milli no bound pod asks,
as a share of all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Counted", "overcommitted_nodes", "unallocated_percent"]

MILLI = "alibabacloud.com/gpu-milli"
COUNT = "alibabacloud.com/gpu-count"


@dataclass(frozen=True)
class Counted:
    gpus: Mapping[str, int]  # node → GPUs
    bound: tuple[tuple[str, int, int], ...]  # (node, GPUs asked, milli each) in bind order

    @classmethod
    def of(
        cls, nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]], bound: Iterable[tuple[str, str]]
    ) -> Counted:
        gpus = {n["metadata"]["name"]: int((n["status"].get("capacity") or {}).get(COUNT, 0)) for n in nodes}
        asks = {}
        for pod in pods:
            notes = pod["metadata"].get("annotations") or {}
            key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
            asks[key] = (int(notes.get(COUNT, 0)), int(notes.get(MILLI, 0)))
        return cls(gpus, tuple((node, *asks.get(key, (0, 0))) for key, node in bound))


def overcommitted_nodes(counted: Counted) -> int:
    free: dict[str, list[int]] = {name: [1000] * n for name, n in counted.gpus.items()}
    bad: set[str] = set()
    for node, count, milli in counted.bound:
        if not count or not milli:
            continue
        gpus = free.setdefault(node, [])
        for _ in range(count):
            fitting = [i for i, left in enumerate(gpus) if left >= milli]
            if not fitting:
                bad.add(node)
                break
            best = min(fitting, key=lambda i: gpus[i])
            gpus[best] -= milli
    return len(bad)


def unallocated_percent(counted: Counted) -> float:
    total = 1000 * sum(counted.gpus.values())
    asked = sum(count * milli for _, count, milli in counted.bound)
    return 100.0 * (total - asked) / total if total else 0.0
