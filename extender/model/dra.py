"""Dynamic Resource Allocation (resource.k8s.io/v1) objects, read for what the advisor models: GPUs.

NVIDIA's DRA driver publishes each node's GPUs as devices of a ResourceSlice (driver ``gpu.nvidia.com``,
attributes ``type``, ``uuid``, ``pcieBusID``, ``resource.kubernetes.io/pcieRoot``, ``productName``,
``index``; capacity ``memory``). A pod asks for them through ``spec.resourceClaims``: a named
ResourceClaim, or a ResourceClaimTemplate that stamps one per pod, whose ``devices.requests`` name a
DeviceClass and a count. Once kube-scheduler allocates a claim, its ``status.allocation`` names the
devices (driver, pool, device), and those are held.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extender.model.pods import PodSpecError, parse_memory_mib

__all__ = [
    "GPU_DEVICE_CLASSES",
    "GPU_DRIVER",
    "ClaimRef",
    "DeviceWants",
    "DraDevice",
    "allocated_devices",
    "claim_gpu_count",
    "claim_wants",
    "pod_claim_refs",
    "product_label",
    "slice_gpus",
]

GPU_DRIVER = "gpu.nvidia.com"
# Device classes whose devices are whole GPUs (NVIDIA's DRA driver installs ``gpu.nvidia.com``).
GPU_DEVICE_CLASSES = frozenset({"gpu.nvidia.com"})


@dataclass(frozen=True)
class DraDevice:
    """One GPU of a ResourceSlice."""

    name: str  # the device's name in its pool ("gpu-0"), what an allocation names
    index: int | None
    uuid: str | None
    pci_bus_id: str | None
    pcie_root: str | None
    product: str | None
    memory_mib: int | None


@dataclass(frozen=True)
class ClaimRef:
    """One entry of a pod's ``spec.resourceClaims``: a claim by name, or a template stamped per pod."""

    name: str  # the entry's name, as containers' ``resources.claims`` use it
    claim: str | None  # resourceClaimName
    template: str | None  # resourceClaimTemplateName


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _attribute(attributes: Mapping[str, Any], name: str) -> Any:
    """A device attribute's value, whatever its type field (string, int, bool, version)."""
    value = _mapping(attributes.get(name) or attributes.get(f"{GPU_DRIVER}/{name}"))
    return next(iter(value.values()), None) if value else None


def slice_gpus(resource_slice: Mapping[str, Any]) -> tuple[str | None, tuple[DraDevice, ...]]:
    """(the node, its GPUs) of a ResourceSlice of NVIDIA's driver; (None, ()) for any other slice."""
    spec = _mapping(resource_slice.get("spec"))
    if spec.get("driver") != GPU_DRIVER:
        return None, ()
    node = spec.get("nodeName") or _mapping(spec.get("pool")).get("name")
    devices = []
    for raw in _list(spec.get("devices")):
        device = _mapping(raw)
        attributes = _mapping(device.get("attributes"))
        if _attribute(attributes, "type") != "gpu" or not device.get("name"):
            continue  # MIG devices and channels are not whole GPUs
        index = _attribute(attributes, "index")
        memory = _mapping(_mapping(device.get("capacity")).get("memory")).get("value")
        try:
            memory_mib = parse_memory_mib(str(memory)) if memory else None
        except PodSpecError:
            memory_mib = None
        devices.append(
            DraDevice(
                name=str(device["name"]),
                index=index if isinstance(index, int) and not isinstance(index, bool) else None,
                uuid=_text(_attribute(attributes, "uuid")),
                pci_bus_id=_text(_attribute(attributes, "pcieBusID")),
                pcie_root=_text(_attribute(attributes, "resource.kubernetes.io/pcieRoot")),
                product=_text(_attribute(attributes, "productName")),
                memory_mib=memory_mib,
            )
        )
    return (str(node) if node else None), tuple(devices)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def claim_gpu_count(claim_spec: Mapping[str, Any], classes: frozenset[str] = GPU_DEVICE_CLASSES) -> int:
    """Whole GPUs a ResourceClaim spec asks for (``exactly`` requests of a GPU class; ``firstAvailable``
    by its first choice, the one the scheduler tries first). ``allocationMode: All`` cannot be counted
    before allocation: it raises :class:`PodSpecError`."""
    total = 0
    for raw in _list(_mapping(claim_spec.get("devices")).get("requests")):
        request = _mapping(raw)
        exactly = _mapping(request.get("exactly")) or _mapping(next(iter(_list(request.get("firstAvailable"))), None))
        if exactly.get("deviceClassName") not in classes:
            continue
        if exactly.get("allocationMode") == "All":
            raise PodSpecError(f"claim request {request.get('name')!r} asks for all GPUs of a node: not a count")
        count = exactly.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise PodSpecError(f"claim request {request.get('name')!r}: count {count!r} is not a whole number ≥ 1")
        total += count
    return total


@dataclass(frozen=True)
class DeviceWants:
    """What a claim's CEL selectors ask of each GPU, where the advisor can say it in its own terms."""

    product: str | None = None  # productName == '…'
    memory_mib: int | None = None  # capacity memory at least this


_ATTR = r"""device\.attributes\[\s*['"]gpu\.nvidia\.com['"]\s*\]"""
_CAPACITY = r"""device\.capacity\[\s*['"]gpu\.nvidia\.com['"]\s*\]"""
_PRODUCT = re.compile(_ATTR + r"""\.productName\s*==\s*['"]([^'"]+)['"]""")
_MEMORY = re.compile(_CAPACITY + r"""\.memory\.compareTo\(\s*quantity\(\s*['"]([^'"]+)['"]\s*\)\s*\)\s*>=?\s*0""")


def claim_wants(claim_spec: Mapping[str, Any], classes: frozenset[str] = GPU_DEVICE_CLASSES) -> DeviceWants:
    """The product and least memory a claim's GPU requests select by CEL. Only these two shapes are
    read (``productName == 'NVIDIA H100 80GB HBM3'``, ``memory.compareTo(quantity('40Gi')) >= 0``);
    any other expression is left to kube-scheduler, which evaluates it when it allocates."""
    product, memory = None, None
    for raw in _list(_mapping(claim_spec.get("devices")).get("requests")):
        exactly = _mapping(_mapping(raw).get("exactly"))
        if exactly.get("deviceClassName") not in classes:
            continue
        for selector in map(_mapping, _list(exactly.get("selectors"))):
            expression = str(_mapping(selector.get("cel")).get("expression") or "")
            if found := _PRODUCT.search(expression):
                product = found.group(1)
            if found := _MEMORY.search(expression):
                try:
                    memory = max(memory or 0, parse_memory_mib(found.group(1)))
                except PodSpecError:
                    continue
    return DeviceWants(product, memory)


def product_label(product: str) -> str:
    """A product name as GPU Feature Discovery writes it in a label: ``NVIDIA H100 80GB HBM3`` →
    ``NVIDIA-H100-80GB-HBM3``."""
    return "-".join(product.split())


def allocated_devices(claim: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(pool, device) of every GPU an allocated ResourceClaim holds; () before allocation."""
    results = _mapping(_mapping(_mapping(claim.get("status")).get("allocation")).get("devices")).get("results")
    return tuple(
        (str(r.get("pool")), str(r.get("device")))
        for r in map(_mapping, _list(results))
        if r.get("driver") == GPU_DRIVER and r.get("pool") and r.get("device")
    )


def pod_claim_refs(pod: Mapping[str, Any]) -> tuple[ClaimRef, ...]:
    """The pod's ``spec.resourceClaims``; for a template, the claim made from it once there is one
    (``status.resourceClaimStatuses``)."""
    made = {
        str(s.get("name")): str(s.get("resourceClaimName"))
        for s in map(_mapping, _list(_mapping(pod.get("status")).get("resourceClaimStatuses")))
        if s.get("resourceClaimName")
    }
    refs = []
    for entry in map(_mapping, _list(_mapping(pod.get("spec")).get("resourceClaims"))):
        name = str(entry.get("name") or "")
        claim = entry.get("resourceClaimName") or made.get(name)
        template = entry.get("resourceClaimTemplateName")
        refs.append(ClaimRef(name, str(claim) if claim else None, str(template) if template else None))
    return tuple(refs)
