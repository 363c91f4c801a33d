"""NodeResourcesFit's scoring strategy as a KubeSchedulerConfiguration sets it (``pluginConfig`` args):
LeastAllocated by default, over cpu and memory at weight 1 each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Literal

from extender.advice.replay.kube_fields import Problems, a_list, mapping, whole

__all__ = ["FitScoring", "ResourceWeight", "ShapePoint", "Strategy", "fit_scoring", "resources_of"]

Strategy = Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]
_STRATEGIES: tuple[Strategy, ...] = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")


@dataclass(frozen=True, slots=True)
class ResourceWeight:
    name: str
    weight: int


@dataclass(frozen=True, slots=True)
class ShapePoint:
    """One point of RequestedToCapacityRatio's shape: utilization 0–100 %, score 0–10."""

    utilization: int
    score: int


@dataclass(frozen=True, slots=True)
class FitScoring:
    """NodeResourcesFit's scoring strategy."""

    strategy: Strategy = "LeastAllocated"
    resources: tuple[ResourceWeight, ...] = (ResourceWeight("cpu", 1), ResourceWeight("memory", 1))
    shape: tuple[ShapePoint, ...] = ()


def resources_of(value: Any, where: str, problems: Problems) -> tuple[ResourceWeight, ...] | None:
    if value is None:
        return None
    out = []
    for i, item in enumerate(a_list(value, where, problems)):
        entry = mapping(item, f"{where}[{i}]", problems)
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            problems.add(f"{where}[{i}]", "a resource needs a name")
            continue
        out.append(ResourceWeight(name, whole(entry.get("weight"), f"{where}[{i}].weight", problems, 1, 100, 1)))
    return tuple(out)


def shape_of(value: Any, where: str, problems: Problems) -> tuple[ShapePoint, ...]:
    points = []
    for i, item in enumerate(a_list(value, where, problems)):
        entry = mapping(item, f"{where}[{i}]", problems)
        utilization = whole(entry.get("utilization"), f"{where}[{i}].utilization", problems, 0, 100, 0)
        score = whole(entry.get("score"), f"{where}[{i}].score", problems, 0, 10, 0)
        points.append(ShapePoint(utilization, score))
    if not points:
        problems.add(where, "RequestedToCapacityRatio needs at least one shape point")
    elif any(b.utilization <= a.utilization for a, b in pairwise(points)):
        problems.add(where, "utilization values must increase")
    return tuple(points)


def fit_scoring(args: Mapping[str, Any], where: str, problems: Problems) -> FitScoring:
    strategy = mapping(args.get("scoringStrategy"), f"{where}.scoringStrategy", problems)
    kind = strategy.get("type", "LeastAllocated")
    if kind not in _STRATEGIES:
        problems.add(f"{where}.scoringStrategy.type", f"{kind!r} is not one of {', '.join(_STRATEGIES)}")
        kind = "LeastAllocated"
    resources = resources_of(strategy.get("resources"), f"{where}.scoringStrategy.resources", problems)
    shape: tuple[ShapePoint, ...] = ()
    if kind == "RequestedToCapacityRatio":
        ratio = mapping(strategy.get("requestedToCapacityRatio"), f"{where}.requestedToCapacityRatio", problems)
        shape = shape_of(ratio.get("shape"), f"{where}.scoringStrategy.requestedToCapacityRatio.shape", problems)
    return FitScoring(kind, resources if resources is not None else FitScoring().resources, shape)
