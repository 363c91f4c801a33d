"""What a node's state reads of its Node object alone, none of its pods: labels, GPU counts, the agent's
notes, taints, CPU and memory, the GPUs it offers for sharing.

A node's state is built again whenever a pod is assumed or bound on it (twice a pod, the pick and then
its binding); the Node object itself changes far less often. Read once per Node object and handed to
:func:`extender.cluster.state.node_state`, these facts spare every rebuild the quantities, labels and
share offers of the Node (60 % of a rebuild at 1,000 one-GPU nodes, measured on a real control plane).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from extender.cluster.node import FreeReport
from extender.model.compute import cpu_milli, memory_mib
from extender.model.gpu_share_node import NodeShareError, SharedGpu, node_gpu_shares
from extender.model.gpu_vendor import is_gpu_resource
from extender.model.pods import PodSpecError
from extender.model.quantity import QuantityError, count_quantity
from extender.model.topology import GpuTopology, TopologyError

__all__ = ["ANNOTATION_FREE_GPUS", "ANNOTATION_TOPOLOGY", "NodeFacts", "node_facts", "resources"]

log = logging.getLogger(__name__)

ANNOTATION_TOPOLOGY = "gpu-advisor.io/topology"
ANNOTATION_FREE_GPUS = "gpu-advisor.io/free-gpus"


class Topologies(Protocol):
    """Where a topology annotation's text is read (``state.MachineTypes``: one shared topology per text)."""

    def topology(self, text: str) -> GpuTopology: ...


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """Read of one Node object; shared by every state built from it, so never written."""

    name: str
    labels: dict[str, str]
    allocatable: dict[str, int]
    capacity: dict[str, int]
    topology: GpuTopology | None
    topology_problem: str | None
    report: FreeReport | None
    taints: tuple[dict[str, str], ...]
    unschedulable: bool
    cpu_allocatable: int | None
    memory_allocatable: int | None
    # The GPUs offered for sharing, or why the offer cannot be read (``shares.gpu_shares``).
    offered: tuple[SharedGpu, ...] | NodeShareError


def node_facts(node: Mapping[str, Any], machines: Topologies) -> NodeFacts:
    """The facts of ``node``; raises what a malformed Node raises (``containment`` contains it)."""
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    name = str(meta.get("name", ""))
    allocatable = resources(status.get("allocatable"))
    spec = node.get("spec") or {}
    taints = tuple(
        {str(k): str(v) for k, v in t.items() if v is not None}
        for t in spec.get("taints") or []
        if isinstance(t, Mapping)
    )
    try:
        offered: tuple[SharedGpu, ...] | NodeShareError = node_gpu_shares(node)
    except NodeShareError as exc:
        offered = exc
    return NodeFacts(
        name,
        {str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        allocatable,
        resources(status.get("capacity")) or dict(allocatable),
        *_annotations(name, meta.get("annotations") or {}, machines),
        taints=taints,
        unschedulable=bool(spec.get("unschedulable")),
        cpu_allocatable=_quantity(status, "cpu"),
        memory_allocatable=_quantity(status, "memory"),
        offered=offered,
    )


def resources(section: Any) -> dict[str, int]:
    """The GPU resources of a status section (allocatable, capacity) that can be read, as counts."""
    out: dict[str, int] = {}
    if isinstance(section, Mapping):
        for name, value in section.items():
            if is_gpu_resource(name):
                try:
                    out[name] = count_quantity(value)
                except QuantityError:
                    continue  # counted as invalid by the source (extender.cluster.containment)
    return out


def _quantity(status: Mapping[str, Any], name: str) -> int | None:
    """Allocatable CPU (milli) or memory (MiB), else capacity; None when neither is readable."""
    for section in ("allocatable", "capacity"):
        values = status.get(section) or {}
        if isinstance(values, Mapping) and name in values:
            try:
                return cpu_milli(values[name]) if name == "cpu" else memory_mib(values[name])
            except PodSpecError:
                return None
    return None


def _annotations(
    name: str, annotations: Mapping[str, Any], machines: Topologies
) -> tuple[GpuTopology | None, str | None, FreeReport | None]:
    """(topology, why a present topology annotation is unusable, free report) from the agent's notes."""
    topology, problem = None, None
    if ANNOTATION_TOPOLOGY in annotations:
        try:
            topology = machines.topology(str(annotations[ANNOTATION_TOPOLOGY]))
        except TopologyError as exc:
            # Reported once by the source that counts invalid objects; a rebuild must not log it again.
            problem = f"topology annotation unreadable: {exc}"
            log.debug("node %s: %s", name, problem)
    report = None
    if ANNOTATION_FREE_GPUS in annotations:
        try:
            report = FreeReport.from_json(str(annotations[ANNOTATION_FREE_GPUS]))
        except ValueError as exc:
            log.debug("node %s: %s; replaying bound pods instead", name, exc)
    return topology, problem, report
