"""Who made a node's GPUs, as data: the Kubernetes resource they are offered as, the name of their
GPU-to-GPU link, and the labels their feature discovery writes.

NVIDIA and AMD boards are wired alike (eight GPUs on an NVLink or XGMI mesh, PCIe and NUMA below), so
placement and scoring treat both the same way; only the words and the resource differ, and those are
looked up here rather than branched on elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.model.amd_labels import LABEL_PRODUCT_NAME

__all__ = [
    "AMD",
    "NVIDIA",
    "RESOURCE_PREFIXES",
    "VENDORS",
    "GpuVendor",
    "is_gpu_resource",
    "vendor_named",
    "vendor_of_resource",
]


@dataclass(frozen=True)
class GpuVendor:
    name: str  # as written in the topology document: "nvidia", "amd"
    resource: str  # the whole-GPU extended resource its device plugin offers
    link: str  # what its GPU-to-GPU links are called in reasons and reports
    product_label: str  # node label naming the GPU product (GFD / AMD node labeller, ``amd_labels``)
    domain: str  # every extended resource under it is one of this vendor's GPUs or a slice of one


NVIDIA = GpuVendor("nvidia", "nvidia.com/gpu", "NVLink", "nvidia.com/gpu.product", "nvidia.com/")
# ROCm/k8s-device-plugin: the device plugin offers amd.com/gpu; its node labeller writes amd.com/gpu.*.
AMD = GpuVendor("amd", "amd.com/gpu", "XGMI", LABEL_PRODUCT_NAME, "amd.com/")
VENDORS = (NVIDIA, AMD)
# Every extended resource under these domains is a GPU (or a slice of one) that the advisor counts.
RESOURCE_PREFIXES = tuple(v.domain for v in VENDORS)


def is_gpu_resource(name: object) -> bool:
    return isinstance(name, str) and name.startswith(RESOURCE_PREFIXES)


def vendor_named(name: str | None) -> GpuVendor:
    """The vendor a topology document names; an absent name is NVIDIA (documents from before AMD)."""
    for vendor in VENDORS:
        if vendor.name == (name or NVIDIA.name):
            return vendor
    raise ValueError(f"GPU vendor {name!r} is not one of {', '.join(v.name for v in VENDORS)}")


def vendor_of_resource(resource: str) -> GpuVendor | None:
    """The vendor whose whole-GPU resource this is; None for any other resource."""
    return next((v for v in VENDORS if v.resource == resource), None)
