"""A bound Pod object → the GPUs it holds on its node, and what about it could not be read.

A pod that runs holds its GPUs whatever else is wrong with it: the API server accepted it and the
kubelet gave it its devices. So its resource counts are read strictly and apart from its
``gpu-advisor.io/*`` knobs; a bad knob is ignored for that pod with a reason, and a pod whose counts
cannot be read at all is taken to hold every GPU of its node (the conservative reading: nothing
there looks free that might not be).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extender.cluster.node import BoundPod, parse_time
from extender.cluster.shares import read_assignment
from extender.model.gpu_vendor import is_gpu_resource
from extender.model.pods import PodRequest, PodSpecError, pod_request_keeping_counts

__all__ = ["Invalid", "PodReading", "read_bound_pod"]

# The reasons an object is counted as invalid (the ``reason`` label of the metric): few and fixed.
KNOB = "annotation"  # a gpu-advisor.io/* knob that cannot be read: ignored for this object
GPU_COUNT = "gpu-count"  # an nvidia.com/* quantity that is not a whole count: the pod holds its whole node
MALFORMED = "malformed"  # a field of the wrong shape
TOPOLOGY = "topology"  # a topology annotation that cannot be read: the node has no known wiring
FREE_GPUS = "free-gpus"  # a free-GPU report that cannot be read: bound pods are replayed instead
RESOURCES = "resources"  # an allocatable/capacity GPU quantity that is not a whole count: taken as 0
ASSIGNMENT = "assignment"  # a sharing binder's GPU record that cannot be read: the pod's GPUs are predicted


@dataclass(frozen=True)
class Invalid:
    """One thing wrong with one object, as the model took it."""

    kind: str  # "Pod" or "Node"
    name: str  # "namespace/name" or the node's name
    reason: str  # one of the reasons above
    detail: str  # for a person: what was wrong and what the model did instead


@dataclass(frozen=True)
class PodReading:
    found: tuple[str, BoundPod] | None  # (node name, pod) when it holds GPUs on a node now
    problems: tuple[Invalid, ...] = ()


def read_bound_pod(pod: Mapping[str, Any]) -> PodReading:
    """(node, pod) for a pod that holds GPUs on a node now, with whatever could not be read of it."""
    spec, status, meta = (_mapping(pod.get(k)) for k in ("spec", "status", "metadata"))
    node = spec.get("nodeName")
    if not node or not isinstance(node, str) or status.get("phase") in ("Succeeded", "Failed"):
        return PodReading(None)
    key = f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
    problems: list[Invalid] = []
    holds_all = False
    try:
        request, knobs = pod_request_keeping_counts(pod)
        problems += [Invalid("Pod", key, KNOB, f"{knob}; ignored for this pod") for knob in knobs]
    except (PodSpecError, AttributeError, TypeError) as exc:
        if not _asks_gpu(spec):
            return PodReading(None)
        request, holds_all = PodRequest(), True
        problems.append(Invalid("Pod", key, GPU_COUNT, f"{exc}; taken to hold every GPU of node {node}"))
    if not request.wants_gpu and not holds_all and not request.cpu_milli and not request.memory_mib:
        return PodReading(None)  # CPU and memory count too: a box whose CPUs are gone strands its GPUs
    priority = spec.get("priority") or 0
    if not isinstance(priority, int) or isinstance(priority, bool) or abs(priority) >= 2**31:
        problems.append(Invalid("Pod", key, MALFORMED, f"priority {str(priority)[:20]!r} is not an int32; taken as 0"))
        priority = 0
    namespace, name = key.split("/", 1)
    assigned: tuple[str, ...] = ()
    if request.wants_gpu:
        assigned, unreadable = read_assignment(_mapping(meta.get("annotations")))
        if unreadable:
            problems.append(Invalid("Pod", key, ASSIGNMENT, f"{unreadable}; its GPUs predicted"))
    bound = BoundPod(namespace, name, request, _bound_at(status, meta), priority, holds_all, assigned)
    return PodReading((node, bound), tuple(problems))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _asks_gpu(spec: Mapping[str, Any]) -> bool:
    """Does any container name an nvidia.com/* or amd.com/* resource, whatever its value?"""
    for part in ("containers", "initContainers"):
        containers = spec.get(part)
        for container in containers if isinstance(containers, list) else ():
            resources = _mapping(_mapping(container).get("resources"))
            for section in ("requests", "limits"):
                if any(is_gpu_resource(name) for name in _mapping(resources.get(section))):
                    return True
    return False


def _bound_at(status: Mapping[str, Any], meta: Mapping[str, Any]) -> float | None:
    bound_at = None
    conditions = status.get("conditions")
    for cond in conditions if isinstance(conditions, list) else ():
        cond = _mapping(cond)
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            bound_at = parse_time(_text(cond.get("lastTransitionTime")))
    return bound_at or parse_time(_text(status.get("startTime"))) or parse_time(_text(meta.get("creationTimestamp")))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
