"""AMD Instinct partitions as Kubernetes resources: whether a node offers the compute/memory partition mode
a pod asks for, counted like MIG slices.

An MI300X can be split by compute (SPX: one GPU, DPX: 2, QPX: 4, CPX: 8 per GPU) and by memory (NPS1, NPS4).
Under its "mixed" naming strategy AMD's device plugin offers each mode as its own resource,
``amd.com/<compute>_<memory>`` (``amd.com/cpx_nps4``), so a pod that names one can only run on a node in that
mode: a node in another mode is a partition-mode mismatch no waiting will fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["PARTITION_RESOURCES", "PartitionFit", "partition_fit", "partition_mode", "partitions_used"]

_COMPUTE = ("spx", "dpx", "tpx", "qpx", "cpx")
_MEMORY = ("nps1", "nps2", "nps4")
_PARTITION = re.compile(rf"^amd\.com/({'|'.join(_COMPUTE)})_({'|'.join(_MEMORY)})$")
# Every mode the device plugin may name (MI300X: SPX/DPX/QPX/CPX with NPS1/NPS4; MI355X also NPS2).
PARTITION_RESOURCES = tuple(f"amd.com/{c}_{m}" for c in _COMPUTE for m in _MEMORY)


@dataclass(frozen=True)
class PartitionFit:
    fits: bool
    reason: str
    unresolvable: bool = False
    used_after: int = 0  # partitions of the asked mode in use once the pod runs (for packing)
    total: int = 0


def partition_mode(resource: str) -> str | None:
    """``amd.com/cpx_nps4`` → ``CPX/NPS4``; None for any other resource."""
    m = _PARTITION.match(resource)
    return f"{m.group(1).upper()}/{m.group(2).upper()}" if m else None


def partitions_used(requests: Iterable[Iterable[tuple[str, int]]]) -> dict[str, int]:
    """Partitions held per resource, from the ``other`` resources of the pods on a node."""
    used: dict[str, int] = {}
    for other in requests:
        for resource, count in other:
            if partition_mode(resource):
                used[resource] = used.get(resource, 0) + count
    return used


def partition_fit(
    asked: Iterable[tuple[str, int]], offered: Mapping[str, int], used: Mapping[str, int]
) -> PartitionFit | None:
    """Does the node have the pod's partitions free? None when the pod asks for no AMD partition."""
    wanted = sorted((r, n) for r, n in asked if partition_mode(r))
    if not wanted:
        return None
    here = sorted({mode for r, v in offered.items() if v and (mode := partition_mode(r))})
    for resource, n in wanted:
        mode, total = partition_mode(resource), offered.get(resource, 0)
        if total == 0:
            modes = ", ".join(here) or "none"
            return PartitionFit(False, f"offers no {mode} partitions (partition modes here: {modes})", True)
        if total < n:
            return PartitionFit(False, f"has {total} {mode} partitions in all, pod needs {n}", True)
        free = total - used.get(resource, 0)
        if free < n:
            return PartitionFit(False, f"{free} of {total} {mode} partitions free, pod needs {n}")
    resource, n = wanted[0]
    total, held = offered[resource], used.get(resource, 0)
    return PartitionFit(
        True, f"{partition_mode(resource)}: {total - held} of {total} partitions free", False, held + n, total
    )
