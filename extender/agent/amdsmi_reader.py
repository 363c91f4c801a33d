"""Discover an AMD Instinct node's GPU topology (and live samples) through the ``amdsmi`` library.

``amdsmi`` (ROCm's AMD SMI Python package) is imported on first use only, like NVML: an NVIDIA node or
a laptop never needs it. Every per-device call may raise on some GPU, driver or partition mode; each such
answer makes that one fact unknown and never aborts discovery.

Each pair's link type (XGMI or PCIe) and hops come from ``amdsmi_topo_get_link_type``, each GPU's NUMA
node from ``amdsmi_topo_get_numa_node_number``; both become a :class:`Link` exactly as the
``rocm-smi --showtopo`` / ``amd-smi topology`` text does (``amd_pair_link``), so the two sources agree.
"""

from __future__ import annotations

import importlib
import logging
from types import ModuleType
from typing import Any

from extender.errors import SourceError
from extender.model.amd_smi_topo import amd_pair_link
from extender.model.topology import Gpu, GpuTopology, Link
from extender.sources.nvml import GpuSample

__all__ = ["AmdSmiUnavailable", "discover_amd_topology", "load_amdsmi", "partition_modes", "sample_amd_gpus"]

log = logging.getLogger(__name__)

_MIB = 1024 * 1024
# amdsmi.h's amdsmi_link_type_t; older wrappers numbered it differently, so the module's own enum wins.
_XGMI_FALLBACK = 2


class AmdSmiUnavailable(SourceError):
    """``amdsmi`` cannot be used on this machine (no package, no amdgpu driver); the message says which."""


def load_amdsmi() -> ModuleType:
    """Import ``amdsmi`` and initialise it for GPUs, or raise :class:`AmdSmiUnavailable`."""
    try:
        amdsmi = importlib.import_module("amdsmi")
    except ImportError:
        raise AmdSmiUnavailable("the amdsmi module is missing: install amdsmi (it ships with ROCm)") from None
    try:
        amdsmi.amdsmi_init()
    except amdsmi.AmdSmiException as exc:
        raise AmdSmiUnavailable(
            f"amdsmi could not start ({exc}): this needs the amdgpu driver and a GPU "
            "(in a pod: /dev/kfd and /dev/dri, as AMD's device plugin gives them)"
        ) from None
    return amdsmi


def _maybe(amdsmi: ModuleType, query: str, *args: Any) -> Any:
    """One amdsmi query by name; any amdsmi error → None (unknown), logged at debug."""
    try:
        return getattr(amdsmi, query)(*args)
    except amdsmi.AmdSmiException as exc:
        log.debug("amdsmi query %s: %s; taken as unknown", query, exc)
        return None


def _xgmi_code(amdsmi: ModuleType) -> int:
    for enum_name, member in (("AmdSmiLinkType", "AMDSMI_LINK_TYPE_XGMI"), ("AmdSmiIoLinkType", "XGMI")):
        value = getattr(getattr(amdsmi, enum_name, None), member, None)
        if value is not None:
            return int(value)
    return _XGMI_FALLBACK


def _vram_type(amdsmi: ModuleType) -> Any:
    memory_type = getattr(amdsmi, "AmdSmiMemoryType", None)
    return getattr(memory_type, "VRAM", 0)


def _gpu(amdsmi: ModuleType, index: int, handle: Any) -> Gpu:
    asic = _maybe(amdsmi, "amdsmi_get_gpu_asic_info", handle) or {}
    total = _maybe(amdsmi, "amdsmi_get_gpu_memory_total", handle, _vram_type(amdsmi))
    numa = _maybe(amdsmi, "amdsmi_topo_get_numa_node_number", handle)
    bdf = _maybe(amdsmi, "amdsmi_get_gpu_device_bdf", handle)
    return Gpu(
        index=index,
        uuid=_maybe(amdsmi, "amdsmi_get_gpu_device_uuid", handle),
        pci_bus_id=str(bdf).lower() if bdf else None,
        product=asic.get("market_name") or None,
        memory_mib=int(total) // _MIB if total else None,
        # The kernel answers -1 (some versions: a huge unsigned value) when the platform has no NUMA.
        numa_node=int(numa) if numa is not None and 0 <= int(numa) < 1024 else None,
    )


def discover_amd_topology(amdsmi: ModuleType) -> GpuTopology:
    """Every GPU, its NUMA node and every pair's link type through an initialised ``amdsmi``."""
    handles = list(amdsmi.amdsmi_get_processor_handles())
    if not handles:
        raise AmdSmiUnavailable("amdsmi reports no GPUs on this node")
    gpus = [_gpu(amdsmi, i, h) for i, h in enumerate(handles)]
    xgmi = _xgmi_code(amdsmi)
    links: list[Link] = []
    for i in range(len(handles)):
        for j in range(i + 1, len(handles)):
            found = _maybe(amdsmi, "amdsmi_topo_get_link_type", handles[i], handles[j]) or {}
            kind, hops = found.get("type"), found.get("hops")
            if kind is None:
                links.append(Link(i, j))  # unknown: no fast link assumed, PCIe level unknown
                continue
            numa_i, numa_j = gpus[i].numa_node, gpus[j].numa_node
            links.append(amd_pair_link(i, j, int(kind) == xgmi, numa_i, numa_j, int(hops) if hops else None))
    return GpuTopology(gpus, links, vendor="amd")


def partition_modes(amdsmi: ModuleType) -> tuple[tuple[str | None, str | None], ...]:
    """Per GPU, its (compute, memory) partition mode such as ("SPX", "NPS1"): re-read the wiring when
    they change, as a partitioned MI300X shows up as more, smaller GPUs."""
    modes = []
    for handle in amdsmi.amdsmi_get_processor_handles():
        compute = _maybe(amdsmi, "amdsmi_get_gpu_compute_partition", handle)
        memory = _maybe(amdsmi, "amdsmi_get_gpu_memory_partition", handle)
        modes.append((str(compute) if compute else None, str(memory) if memory else None))
    return tuple(modes)


def sample_amd_gpus(amdsmi: ModuleType) -> list[GpuSample]:
    """Live graphics-engine activity and VRAM per GPU; unsupported readings are None."""
    samples = []
    for i, handle in enumerate(amdsmi.amdsmi_get_processor_handles()):
        activity = _maybe(amdsmi, "amdsmi_get_gpu_activity", handle) or {}
        used = _maybe(amdsmi, "amdsmi_get_gpu_memory_usage", handle, _vram_type(amdsmi))
        total = _maybe(amdsmi, "amdsmi_get_gpu_memory_total", handle, _vram_type(amdsmi))
        gfx = activity.get("gfx_activity")
        samples.append(
            GpuSample(
                index=i,
                uuid=_maybe(amdsmi, "amdsmi_get_gpu_device_uuid", handle),
                sm_util_percent=int(gfx) if isinstance(gfx, int | float) else None,  # "N/A" when unsupported
                memory_used_mib=int(used) // _MIB if used is not None else None,
                memory_total_mib=int(total) // _MIB if total is not None else None,
            )
        )
    return samples
