"""What the admission rules read and write: the workload (a pod, or a controller's pod template, with
the model it serves), the cluster as the rules see it, and a finding.

A workload is made only from a template that fits ``ADVICE_SHAPE`` (the same check as the extender's
objects, over every field a rule reads): the rules may then take Kubernetes' types for granted, and a
field of the wrong type is one ``invalid-gpu-request`` finding naming it, never an exception in a rule."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from extender.cluster.dra_view import NO_DRA, DraObjects
from extender.cluster.selectors import eligible_nodes
from extender.cluster.state import NodeState
from extender.model.needs import MemoryNeed, ModelNeed, memory_need
from extender.model.object_shape import ADVICE_SHAPE, shape_problem
from extender.model.pods import PodRequest, PodSpecError

__all__ = [
    "GB_PER_MIB",
    "MAX_MESSAGE",
    "ClusterView",
    "Finding",
    "Severity",
    "Workload",
    "invalid_request",
    "workload_from",
]

Severity = Literal["info", "warning", "error"]
MAX_MESSAGE = 120
HIGH_PRIORITY_CLASSES = frozenset({"high-priority", "system-cluster-critical", "system-node-critical"})
# GPU and declared memory are counted in GiB and written "GB", as GPU products are named ("80GB" H100 =
# 81,559 MiB); model weights are quoted in 10^9 bytes. The 7 % between them is well inside the headroom.
GB_PER_MIB = 1 / 1024


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    message: str
    advice: str

    def __post_init__(self) -> None:
        if len(self.message) > MAX_MESSAGE:
            object.__setattr__(self, "message", self.message[: MAX_MESSAGE - 1] + "…")

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "severity": self.severity, "message": self.message, "advice": self.advice}


@dataclass(frozen=True)
class Workload:
    """A pod, or the pod template of a controller, as the rules see it."""

    kind: str
    name: str
    namespace: str
    template: Mapping[str, Any]  # {"metadata": …, "spec": …} of the pods it makes
    request: PodRequest

    @property
    def model(self) -> ModelNeed | None:
        """The model its server names (read with the request, so scheduling sees the same one)."""
        return self.request.model

    @property
    def memory(self) -> MemoryNeed | None:
        return memory_need(self.request)

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.template.get("spec") or {}

    @property
    def latency_sensitive(self) -> bool:
        if self.request.latency_sensitive:
            return True
        spec = self.spec  # its priority is an int32 or absent: workload_from checked it
        return spec.get("priorityClassName") in HIGH_PRIORITY_CLASSES or (spec.get("priority") or 0) >= 1_000_000

    def memory_per_gpu_gb(self) -> tuple[float, str] | None:
        """(GB per GPU, where it comes from), declared first, else inferred from the model."""
        if self.request.gpu_memory_mib:
            return self.request.gpu_memory_mib * GB_PER_MIB, "declared"
        if self.model is not None:
            return self.model.need_per_gpu_gb, f"inferred: {self.model.describe()}"
        return None


@dataclass(frozen=True)
class ClusterView:
    nodes: tuple[NodeState, ...]
    dra: DraObjects = NO_DRA  # the claims and templates a pod may ask GPUs through

    def eligible(self, workload: Workload) -> list[NodeState]:
        # A node of the other GPU vendor can never run it: its rules judge only nodes of its vendor.
        wanted = workload.request.resource
        nodes = [n for n in self.nodes if n.gpu_total == 0 or n.gpu_vendor.resource == wanted]
        return eligible_nodes(nodes, workload.spec)


def workload_from(kind: str, name: str, namespace: str, template: Mapping[str, Any], request: PodRequest) -> Workload:
    """The workload the rules judge; :class:`PodSpecError` naming the first field a rule could not read."""
    if (problem := shape_problem(template, ADVICE_SHAPE)) is not None:
        raise PodSpecError(problem)
    return Workload(kind, name, namespace, template, request)


def invalid_request(message: str) -> Finding:
    """The finding for an object whose GPU request, knobs or rule-read fields cannot be read."""
    return Finding("invalid-gpu-request", "error", message, "fix the value; see docs/admission.md")
