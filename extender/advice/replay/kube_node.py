"""A node as kube-scheduler's cache holds it, and what its enabled score plugins give a pod there.

kube-scheduler counts only what its plugins read: CPU, memory and the pod count (the replay's pods ask
for GPUs through annotations, which no plugin reads). Moved out of ``kube_scheduler`` so the cycle
stays one screen; the formulas themselves are ``kube_scores``'.
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.advice.replay.kube_profile import BALANCED, FIT, KubeSchedulerProfile
from extender.advice.replay.kube_scores import (
    balanced_allocation,
    least_allocated,
    most_allocated,
    requested_to_capacity_ratio,
)
from extender.advice.replay.specs import PodShape

__all__ = ["MIB", "NODE_POD_LIMIT", "KubeNode", "plugin_total", "requests"]

MIB = 1024 * 1024
NODE_POD_LIMIT = 1000  # the ``pods`` capacity ``replay_node_object`` gives every node


@dataclass(slots=True)
class KubeNode:
    """A node as kube-scheduler's cache holds it: allocatable and what its pods request."""

    cpu: int  # allocatable milli-CPU
    memory: int  # allocatable bytes
    cpu_requested: int = 0
    memory_requested: int = 0
    pods: int = 0

    def admits(self, cpu: int, memory: int) -> bool:
        """NodeResourcesFit's filter on cpu and memory, and the pod count."""
        return (
            self.pods + 1 <= NODE_POD_LIMIT
            and self.cpu_requested + cpu <= self.cpu
            and self.memory_requested + memory <= self.memory
        )

    def take(self, cpu: int, memory: int) -> None:
        """A pod bound here (kube-scheduler's assume, then the binding)."""
        self.cpu_requested += cpu
        self.memory_requested += memory
        self.pods += 1


def requests(shape: PodShape) -> tuple[int, int]:
    """The pod's CPU (milli) and memory (bytes) requests, as kube-scheduler reads them."""
    # Replay pods state both requests (``replay_pod_object``), so kube-scheduler's non-zero defaults
    # for unstated requests (``kube_scores.nonzero_request``) never apply: requested == non-zero requested.
    return shape.cpu_milli, shape.memory_mib * MIB


def plugin_total(profile: KubeSchedulerProfile, node: KubeNode, cpu: int, memory: int) -> int:
    """Σ weight × score over NodeResourcesFit and NodeResourcesBalancedAllocation for this pod."""
    total = 0
    fit_weight = profile.weight(FIT)
    if fit_weight:
        fit = profile.fit
        requested = [_requested(node, r.name, cpu, memory) for r in fit.resources]
        allocatable = [_allocatable(node, r.name) for r in fit.resources]
        weights = [r.weight for r in fit.resources]
        if fit.strategy == "LeastAllocated":
            score = least_allocated(requested, allocatable, weights)
        elif fit.strategy == "MostAllocated":
            score = most_allocated(requested, allocatable, weights)
        else:
            score = requested_to_capacity_ratio(requested, allocatable, weights, fit.shape)
        total += fit_weight * score
    balanced_weight = profile.weight(BALANCED)
    if balanced_weight and (cpu or memory):  # a pod requesting nothing is skipped (best effort)
        names = [r.name for r in profile.balanced_resources]
        requested = [_requested(node, n, cpu, memory) for n in names]
        total += balanced_weight * balanced_allocation(requested, [_allocatable(node, n) for n in names])
    return total


def _requested(node: KubeNode, resource: str, cpu: int, memory: int) -> int:
    if resource == "cpu":
        return node.cpu_requested + cpu
    if resource == "memory":
        return node.memory_requested + memory
    return 0  # replay pods request no other resource: left out of the score (allocatable 0 below)


def _allocatable(node: KubeNode, resource: str) -> int:
    return node.cpu if resource == "cpu" else node.memory if resource == "memory" else 0
