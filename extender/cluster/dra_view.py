"""DRA-allocated GPUs seen as the advisor's model sees device-plugin GPUs.

A node whose GPUs are published as ResourceSlice devices has no ``nvidia.com/gpu`` allocatable, and a
pod that asks through a ResourceClaim has no ``nvidia.com/gpu`` count, so the advisor would see neither.
This view writes them in the terms the model already reads, so one code path judges both:

- a node gets ``nvidia.com/gpu`` = its GPU devices, and, with no agent topology, a coarser one from the
  slice (GPUs under one PCIe root are ``PHB`` apart, others ``SYS``; NVLink unknown, so none);
- the GPUs allocated claims hold are known exactly, so unless the agent already reported which GPUs
  are free, the node gets that report: every device no allocated claim names. Devices are matched to
  the agent's topology by UUID, then PCI bus id, then the driver's ``index``;
- a pod gets ``nvidia.com/gpu`` = the GPUs its claims (or claim templates) ask for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from extender.cluster.node import LABEL_PRODUCT, FreeReport, parse_time
from extender.model.devices import Gpu, Link, PcieLevel
from extender.model.dra import (
    DeviceWants,
    DraDevice,
    allocated_devices,
    claim_gpu_count,
    claim_wants,
    pod_claim_refs,
    product_label,
    slice_gpus,
)
from extender.model.pods import ANNOTATION_GPU_MEMORY, GPU_RESOURCE, PodSpecError, pod_template
from extender.model.topology import GpuTopology, TopologyError

__all__ = ["DRA_KINDS", "NO_DRA", "DraObjects", "node_through_slices", "pod_through_claims", "workload_and_claims"]

_TOPOLOGY = "gpu-advisor.io/topology"  # extender.cluster.state's annotations, which builds on this module
_FREE = "gpu-advisor.io/free-gpus"
DRA_KINDS = ("ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")


@dataclass(frozen=True)
class DraObjects:
    """The DRA objects of a cluster the advisor reads: its GPU slices, claims and claim templates."""

    gpus: Mapping[str, tuple[DraDevice, ...]]  # node → its GPU devices
    held: Mapping[str, frozenset[str]]  # pool (node) → the devices allocated claims hold
    claims: Mapping[str, Mapping[str, Any]]  # namespace/name → claim spec
    templates: Mapping[str, Mapping[str, Any]]  # namespace/name → the spec of the claims it makes
    # pool (node) → its newest allocation: a pod bound by then holds what its claim names, and must
    # not be replayed onto GPUs again as a pod bound after the free report would be
    allocated_at: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def read(cls, items: Iterable[Mapping[str, Any]]) -> DraObjects:
        gpus: dict[str, list[DraDevice]] = {}
        held: dict[str, set[str]] = {}
        claims: dict[str, Mapping[str, Any]] = {}
        templates: dict[str, Mapping[str, Any]] = {}
        allocated_at: dict[str, float] = {}
        for item in items:
            kind = item.get("kind")
            meta = _field(item, "metadata")
            key = f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
            spec = _field(item, "spec")
            if kind == "ResourceSlice":
                node, devices = slice_gpus(item)
                if node:
                    gpus.setdefault(node, []).extend(devices)
            elif kind == "ResourceClaim":
                claims[key] = spec
                when = parse_time(str(_allocation(item).get("allocationTimestamp") or ""))
                for pool, device in allocated_devices(item):
                    held.setdefault(pool, set()).add(device)
                    allocated_at[pool] = max(allocated_at.get(pool, 0.0), when or 0.0)
            elif kind == "ResourceClaimTemplate":
                inner = spec.get("spec")
                templates[key] = inner if isinstance(inner, Mapping) else {}
        return cls(
            {n: tuple(d) for n, d in gpus.items()},
            {p: frozenset(d) for p, d in held.items()},
            claims,
            templates,
            allocated_at,
        )


NO_DRA = DraObjects({}, {}, {}, {})


def _field(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """An object field, or {} where it is absent or not an object."""
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def _allocation(claim: Mapping[str, Any]) -> Mapping[str, Any]:
    return _field(_field(claim, "status"), "allocation")


def pod_through_claims(pod: Mapping[str, Any], dra: DraObjects) -> Mapping[str, Any]:
    """The pod with ``nvidia.com/gpu`` set to what its claims ask, and what their CEL selectors ask of
    each GPU as the knobs the model reads (a product as GFD's ``nvidia.com/gpu.product`` nodeSelector,
    least memory as ``gpu-advisor.io/gpu-memory``). The same object when it asks nothing through
    claims, already counts ``nvidia.com/gpu``, or names claims this model does not know."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping) or not spec.get("resourceClaims"):
        return pod  # the common case, one lookup: most pods have no claims
    namespace = str(_field(pod, "metadata").get("namespace") or "default")
    count, wants = 0, DeviceWants()
    for ref in pod_claim_refs(pod):
        claim = dra.claims.get(f"{namespace}/{ref.claim}") if ref.claim else None
        if claim is None and ref.template:
            claim = dra.templates.get(f"{namespace}/{ref.template}")
        if claim is None:
            continue
        try:
            count += claim_gpu_count(claim)
        except PodSpecError:
            return pod  # "all GPUs of a node" is no count: judged as before, unsteered
        found = claim_wants(claim)
        wants = DeviceWants(found.product or wants.product, max(found.memory_mib or 0, wants.memory_mib or 0) or None)
    containers = spec.get("containers")
    if not count or not isinstance(containers, list) or not containers or _counts_gpus(containers):
        return pod
    return _asking(pod, spec, containers, count, wants)


def _asking(
    pod: Mapping[str, Any], spec: Mapping[str, Any], containers: list[Any], count: int, wants: DeviceWants
) -> Mapping[str, Any]:
    """The pod asking ``count`` GPUs of its first container, with the knobs ``wants`` gives."""
    first = dict(containers[0]) if isinstance(containers[0], Mapping) else {}
    resources = dict(first.get("resources") or {})
    resources["limits"] = {**(resources.get("limits") or {}), GPU_RESOURCE: str(count)}
    first["resources"] = resources
    new_spec = {**spec, "containers": [first, *containers[1:]]}
    meta = dict(_field(pod, "metadata"))
    if wants.product:
        new_spec["nodeSelector"] = {LABEL_PRODUCT: product_label(wants.product), **_field(spec, "nodeSelector")}
    if wants.memory_mib:
        meta["annotations"] = {ANNOTATION_GPU_MEMORY: f"{wants.memory_mib}Mi", **_field(meta, "annotations")}
    return {**pod, "metadata": meta, "spec": new_spec}


def _counts_gpus(containers: list[Any]) -> bool:
    for container in containers:
        resources = container.get("resources") if isinstance(container, Mapping) else None
        for section in ("requests", "limits"):
            values = resources.get(section) if isinstance(resources, Mapping) else None
            if isinstance(values, Mapping) and GPU_RESOURCE in values:
                return True
    return False


def node_through_slices(node: Mapping[str, Any], dra: DraObjects, at: float) -> Mapping[str, Any]:
    """The Node with its DRA GPUs as ``nvidia.com/gpu``, a topology and a free report (see above); the
    same object for a node with no GPU devices in any slice."""
    meta = _field(node, "metadata")
    devices = dra.gpus.get(str(meta.get("name") or ""))
    if not devices:
        return node
    status = dict(node.get("status") or {})
    for section in ("allocatable", "capacity"):
        values = dict(status.get(section) or {})
        values.setdefault(GPU_RESOURCE, str(len(devices)))
        status[section] = values
    labels = dict(meta.get("labels") or {})
    products = {d.product for d in devices if d.product}
    if len(products) == 1:  # as GFD would label it, so a product selector reads the same on every node
        labels.setdefault(LABEL_PRODUCT, product_label(products.pop()))
    annotations = dict(meta.get("annotations") or {})
    topology = _agent_topology(annotations)
    if topology is None:
        topology = slice_topology(devices)
        annotations[_TOPOLOGY] = topology.to_json()
    if _FREE not in annotations:
        held = dra.held.get(str(meta.get("name")), frozenset())
        index = _indices(devices, topology)
        free = tuple(sorted(i for d, i in index.items() if d not in held))
        at = max(at, dra.allocated_at.get(str(meta.get("name")), 0.0))
        annotations[_FREE] = FreeReport(free, at).to_json()
    return {**node, "metadata": {**meta, "labels": labels, "annotations": annotations}, "status": status}


def _agent_topology(annotations: Mapping[str, Any]) -> GpuTopology | None:
    text = annotations.get(_TOPOLOGY)
    try:
        return GpuTopology.from_json(str(text)) if text else None
    except TopologyError:
        return None  # the cluster model says why; the slice's view stands in


def slice_topology(devices: tuple[DraDevice, ...]) -> GpuTopology:
    """The coarse topology a slice alone gives: GPUs by the driver's index, PCIe root sharing only."""
    gpus = [
        Gpu(index=_index(d, n), uuid=d.uuid, pci_bus_id=d.pci_bus_id, product=d.product, memory_mib=d.memory_mib)
        for n, d in enumerate(devices)
    ]
    roots = {_index(d, n): d.pcie_root for n, d in enumerate(devices)}
    links = [Link(a.index, b.index, 0, _level(roots[a.index], roots[b.index])) for a, b in combinations(gpus, 2)]
    return GpuTopology(gpus, links)


def _index(device: DraDevice, n: int) -> int:
    return device.index if device.index is not None else n


def _level(a: str | None, b: str | None) -> PcieLevel | None:
    if a is None or b is None:
        return None
    return PcieLevel.PHB if a == b else PcieLevel.SYS


def _indices(devices: tuple[DraDevice, ...], topology: GpuTopology) -> dict[str, int]:
    """Device name → the topology's GPU index: by UUID, else PCI bus id, else the driver's index."""
    by_uuid = {g.uuid: g.index for g in topology.gpus if g.uuid}
    by_bus = {g.pci_bus_id.lower(): g.index for g in topology.gpus if g.pci_bus_id}
    known = set(topology.indices)
    found: dict[str, int] = {}
    for n, d in enumerate(devices):
        index = by_uuid.get(d.uuid or "")
        if index is None:
            index = by_bus.get((d.pci_bus_id or "").lower())
        if index is None and _index(d, n) in known:
            index = _index(d, n)
        if index is not None:
            found[d.name] = index
    return found


def workload_and_claims(doc: Any) -> tuple[Any, DraObjects]:
    """A file as users ``kubectl apply -f`` it → (the one workload in it, the DRA objects beside it).

    A ``v1 List`` or several YAML documents (``read_manifest`` gives those as a List too) may hold a Pod
    and the ResourceClaimTemplate it names; the claim is resolved from the same file. Anything else is
    the workload itself, with no DRA objects of its own."""
    items = doc.get("items") if isinstance(doc, Mapping) and doc.get("kind") == "List" else None
    if items is None:
        return doc, NO_DRA
    if not isinstance(items, list):
        raise PodSpecError("a List's items must be a list of objects")
    objects = [i for i in items if isinstance(i, Mapping)]
    workloads = [i for i in objects if i.get("kind") not in DRA_KINDS and pod_template(i) is not None]
    if len(workloads) != 1:
        kinds = ", ".join(str(i.get("kind")) for i in objects) or "nothing"
        raise PodSpecError(f"the file must hold one Pod or workload to judge (besides DRA objects); it holds {kinds}")
    return workloads[0], DraObjects.read(i for i in objects if i.get("kind") in DRA_KINDS)
