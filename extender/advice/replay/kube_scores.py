"""kube-scheduler v1.36's node scores and sampling, as pure integer functions (Go's int64 arithmetic).

Each formula cites the Go file it follows (``pkg/scheduler/...``); every division of two integers
truncates toward zero as Go's does. Resources are given as parallel lists: ``requested[i]`` (what the
node already holds plus the pod) against ``allocatable[i]``, weighted by ``weights[i]``; a resource
with allocatable 0 is left out (``resource_allocation.go`` ``score``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from extender.advice.replay.kube_fit import ShapePoint

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "MAX_NODE_SCORE",
    "balanced_allocation",
    "extender_points",
    "is_interested",
    "least_allocated",
    "most_allocated",
    "nonzero_request",
    "num_feasible_nodes_to_find",
    "requested_to_capacity_ratio",
]

MAX_NODE_SCORE = 100  # framework.MaxNodeScore
MAX_EXTENDER_PRIORITY = 10  # extenderv1.MaxExtenderPriority
MAX_CUSTOM_PRIORITY_SCORE = 10  # config.MaxCustomPriorityScore (a shape point's score)
MIN_FEASIBLE_NODES_TO_FIND = 100  # schedule_one.go
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
# pkg/scheduler/util: what a container that states no cpu / memory request counts as, for scoring.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


def _quo(a: int, b: int) -> int:
    """Go's integer division: truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def num_feasible_nodes_to_find(percentage: int, nodes: int) -> int:
    """``schedule_one.go`` ``numFeasibleNodesToFind``: how many feasible nodes end the search.

    Fewer than 100 nodes: all. Percentage 0 (unset) is adaptive, ``50 - nodes/125`` but at least 5;
    then ``nodes * percentage / 100``, but at least 100."""
    if nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return nodes
    if percentage == 0:
        percentage = max(50 - nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def nonzero_request(resource: str, stated: int | None) -> int:
    """``resource_allocation.go`` ``calculatePodResourceRequest`` with ``NonMissingContainerRequests``
    (NodeResourcesFit's scoring, not BalancedAllocation's): a container that states no cpu or memory
    request counts as 100m / 200 MiB; one that states 0 counts as 0."""
    if stated is not None:
        return stated
    return {"cpu": DEFAULT_MILLI_CPU_REQUEST, "memory": DEFAULT_MEMORY_REQUEST}.get(resource, 0)


def _weighted(scores: Sequence[tuple[int, int]]) -> int:
    weight_sum = sum(w for _, w in scores)
    return _quo(sum(s * w for s, w in scores), weight_sum) if weight_sum else 0


def least_allocated(requested: Sequence[int], allocatable: Sequence[int], weights: Sequence[int]) -> int:
    """``least_allocated.go``: per resource ``(allocatable - requested) * 100 / allocatable`` (0 when
    requested exceeds allocatable), then the weighted mean, both divisions truncated."""
    per = [
        (0 if r > a else _quo((a - r) * MAX_NODE_SCORE, a), w)
        for r, a, w in zip(requested, allocatable, weights, strict=True)
        if a != 0
    ]
    return _weighted(per)


def most_allocated(requested: Sequence[int], allocatable: Sequence[int], weights: Sequence[int]) -> int:
    """``most_allocated.go``: per resource ``min(requested, allocatable) * 100 / allocatable``, then
    the weighted mean, both divisions truncated."""
    per = [
        (_quo(min(r, a) * MAX_NODE_SCORE, a), w)
        for r, a, w in zip(requested, allocatable, weights, strict=True)
        if a != 0
    ]
    return _weighted(per)


def _broken_linear(shape: Sequence[ShapePoint], p: int) -> int:
    """``helper.BuildBrokenLinearFunction`` over points scaled to 0–100: flat before the first and after
    the last point, straight lines between (the division truncated toward zero)."""
    points = [(s.utilization, s.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for s in shape]
    for i, (u, s) in enumerate(points):
        if p <= u:
            if i == 0:
                return s
            u0, s0 = points[i - 1]
            return s0 + _quo((s - s0) * (p - u0), u - u0)
    return points[-1][1]


def requested_to_capacity_ratio(
    requested: Sequence[int], allocatable: Sequence[int], weights: Sequence[int], shape: Sequence[ShapePoint]
) -> int:
    """``requested_to_capacity_ratio.go``: per resource the shape at ``requested * 100 / allocatable``
    (at 100 when requested exceeds allocatable); only resources scoring above 0 enter the weighted
    mean, which is rounded half away from zero (``math.Round``)."""
    per = []
    for r, a, w in zip(requested, allocatable, weights, strict=True):
        if a == 0:
            continue
        score = _broken_linear(shape, 100 if r > a else _quo(r * 100, a))
        if score > 0:
            per.append((score, w))
    weight_sum = sum(w for _, w in per)
    if not weight_sum:
        return 0
    q, r = divmod(sum(s * w for s, w in per), weight_sum)
    return q + (1 if 2 * r >= weight_sum else 0)


def balanced_allocation(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``balanced_allocation.go`` ``balancedResourceScorer``: each resource's fraction
    ``requested / allocatable`` (capped at 1); with two, ``std = |f1 - f2| / 2``; with more, the
    population standard deviation; score ``int64((1 - std) * 100)``. Requested counts real requests
    (``useRequested``), and a pod requesting none of the resources is skipped (``isBestEffortPod``)
    by the caller."""
    fractions = [min(r / a, 1.0) for r, a in zip(requested, allocatable, strict=True) if a != 0]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = (sum((f - mean) * (f - mean) for f in fractions) / len(fractions)) ** 0.5
    return int((1 - std) * MAX_NODE_SCORE)


def extender_points(weight: int, wire_score: int) -> int:
    """``schedule_one.go`` ``prioritizeNodes``: an extender's 0–10 score times its weight, times
    ``MaxNodeScore / MaxExtenderPriority`` (10), added to the plugins' total."""
    return wire_score * weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)


def _asks(containers: Any, managed: frozenset[str]) -> bool:
    for container in containers if isinstance(containers, list) else ():
        resources = container.get("resources") if isinstance(container, Mapping) else None
        for section in ("requests", "limits"):
            values = resources.get(section) if isinstance(resources, Mapping) else None
            if isinstance(values, Mapping) and any(name in managed for name in values):
                return True
    return False


def is_interested(managed: frozenset[str], pod: Mapping[str, Any]) -> bool:
    """``extender.go`` ``IsInterested``: no managedResources means every pod; otherwise a container or
    an init container names one of them among its requests or its limits (whatever the value)."""
    if not managed:
        return True
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return False
    return _asks(spec.get("containers"), managed) or _asks(spec.get("initContainers"), managed)
