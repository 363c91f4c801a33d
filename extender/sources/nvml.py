"""Discover a node's GPU topology (and live samples) through NVML, as a real GPU node needs it.

Every per-device call may answer NotSupported / NotFound on some GPU, driver or virtualised setup;
each such answer makes that one fact "unknown" and never aborts discovery.

NVSwitch: on HGX/DGX A100/H100/B200 every NVLink ends at a switch, so matching a link's remote PCI bus
id to a peer GPU finds nothing and every pair would look like 0 NVLinks (NVIDIA's own allocator makes
exactly that mistake). Links whose remote device type is SWITCH are counted per GPU instead, and every
pair of switch-attached GPUs is joined with ``min(switch links of both)`` NVLinks.
"""

from __future__ import annotations

import importlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from extender.errors import SourceError
from extender.model.topology import Gpu, GpuTopology, Link, MigInstance, PcieLevel
from extender.sources.fabric import fabric_clique

__all__ = [
    "GpuSample",
    "NvmlUnavailable",
    "discover_topology",
    "load_nvml",
    "mig_layout",
    "normalize_bus_id",
    "sample_gpus",
]

log = logging.getLogger(__name__)

_MIB = 1024 * 1024
_LEVEL_OF_NVML = {
    0: PcieLevel.INTERNAL,
    10: PcieLevel.PIX,
    20: PcieLevel.PXB,
    30: PcieLevel.PHB,
    40: PcieLevel.NODE,
    50: PcieLevel.SYS,
}
_DEVICE_TYPE_GPU = 0x00
_DEVICE_TYPE_SWITCH = 0x02
_MIG_PROFILE = re.compile(r"(\d+g\.\d+gb(?:\+\w+)?)", re.IGNORECASE)
_BUS_ID = re.compile(r"^(?:([0-9a-fA-F]+):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$")


class NvmlUnavailable(SourceError):
    """NVML cannot be used on this machine (no library, no driver); the message says which."""


@dataclass(frozen=True)
class GpuSample:
    """One live reading of a GPU; a None field was not supported by the device."""

    index: int
    uuid: str | None
    sm_util_percent: int | None
    memory_used_mib: int | None
    memory_total_mib: int | None


def load_nvml() -> ModuleType:
    """Import ``pynvml`` (from nvidia-ml-py) and initialise it, or raise :class:`NvmlUnavailable`."""
    try:
        nvml = importlib.import_module("pynvml")
    except ImportError:
        raise NvmlUnavailable("the pynvml module is missing: install nvidia-ml-py") from None
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        raise NvmlUnavailable(
            f"NVML could not start ({exc}): this needs an NVIDIA driver and a GPU "
            "(in a pod: the nvidia runtime class or NVIDIA_VISIBLE_DEVICES)"
        ) from None
    return nvml


def normalize_bus_id(raw: str | bytes) -> str:
    """NVML writes ``00000000:07:00.0``; sysfs names ``0000:07:00.0``. Lower-case, 4-digit domain."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    m = _BUS_ID.match(text.strip())
    if not m:
        return text.strip().lower()
    domain, bus, device, function = m.groups()
    return f"{int(domain or '0', 16):04x}:{int(bus, 16):02x}:{int(device, 16):02x}.{function}"


def _text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _maybe(nvml: ModuleType, query: str, *args: Any) -> Any:
    """One NVML query by name; NotSupported/NotFound/any NVML error → None (unknown), logged at debug."""
    try:
        return getattr(nvml, query)(*args)
    except nvml.NVMLError as exc:
        log.debug("nvml query %s: %s; taken as unknown", query, exc)
        return None


def _maybe_text(nvml: ModuleType, query: str, *args: Any) -> str | None:
    value = _maybe(nvml, query, *args)
    return None if value is None else _text(value)


def _numa_node(sysfs: Path, bus_id: str | None) -> int | None:
    if bus_id is None:
        return None
    try:
        value = int((sysfs / "bus/pci/devices" / bus_id / "numa_node").read_text().strip())
    except (OSError, ValueError):
        return None
    return value if value >= 0 else None  # the kernel writes -1 when the platform has no NUMA


def _mig_instances(nvml: ModuleType, handle: Any) -> tuple[MigInstance, ...] | None:
    mode = _maybe(nvml, "nvmlDeviceGetMigMode", handle)
    if not mode or mode[0] != 1:
        return None
    count = _maybe(nvml, "nvmlDeviceGetMaxMigDeviceCount", handle) or 0
    instances: list[MigInstance] = []
    for slot in range(count):
        mig = _maybe(nvml, "nvmlDeviceGetMigDeviceHandleByIndex", handle, slot)
        if mig is None:
            continue  # empty slot: NVML answers NotFound
        name = _maybe_text(nvml, "nvmlDeviceGetName", mig) or ""
        found = _MIG_PROFILE.search(name)
        memory = _maybe(nvml, "nvmlDeviceGetMemoryInfo", mig)
        uuid = _maybe_text(nvml, "nvmlDeviceGetUUID", mig)
        profile = found.group(1).lower() if found else "unknown"
        instances.append(MigInstance(profile, uuid, int(memory.total) // _MIB if memory is not None else None))
    return tuple(instances)


def _nvlink_peers(nvml: ModuleType, handle: Any) -> tuple[list[str], int]:
    """Remote bus ids of active GPU-to-GPU links, and the number of active links ending at a switch."""
    peers: list[str] = []
    switch_links = 0
    for link in range(int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18))):
        try:
            active = nvml.nvmlDeviceGetNvLinkState(handle, link)
        except nvml.NVMLError:
            # NotSupported: no NVLink here (or on the whole GPU); InvalidArgument: past the GPU's last link.
            continue
        if not active:
            continue
        kind = _maybe(nvml, "nvmlDeviceGetNvLinkRemoteDeviceType", handle, link)
        if kind == _DEVICE_TYPE_SWITCH:
            switch_links += 1
            continue
        if kind not in (None, _DEVICE_TYPE_GPU):
            continue  # IBM NPU and the like: not a GPU peer
        pci = _maybe(nvml, "nvmlDeviceGetNvLinkRemotePciInfo", handle, link)
        if pci is not None:
            peers.append(normalize_bus_id(pci.busId))
    return peers, switch_links


def discover_topology(nvml: ModuleType, sysfs: Path = Path("/sys"), clique: str | None = None) -> GpuTopology:
    """Read every GPU, every pair's PCIe common ancestor and every NVLink through an initialised NVML."""
    count = int(nvml.nvmlDeviceGetCount())
    if count == 0:
        raise NvmlUnavailable("NVML reports no GPUs on this node")
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]

    gpus: list[Gpu] = []
    bus_ids: list[str | None] = []
    for i, h in enumerate(handles):
        pci = _maybe(nvml, "nvmlDeviceGetPciInfo", h)
        memory = _maybe(nvml, "nvmlDeviceGetMemoryInfo", h)
        bus_id = normalize_bus_id(pci.busId) if pci is not None else None
        bus_ids.append(bus_id)
        gpus.append(
            Gpu(
                index=i,
                uuid=_maybe_text(nvml, "nvmlDeviceGetUUID", h),
                pci_bus_id=bus_id,
                product=_maybe_text(nvml, "nvmlDeviceGetName", h),
                memory_mib=int(memory.total) // _MIB if memory is not None else None,
                numa_node=_numa_node(sysfs, bus_id),
                mig=_mig_instances(nvml, h),
            )
        )
    clique = clique if clique is not None else fabric_clique(nvml, handles)
    return GpuTopology(gpus, _links(nvml, handles, bus_ids), clique=clique)


def _links(nvml: ModuleType, handles: list[Any], bus_ids: list[str | None]) -> list[Link]:
    """Every pair's NVLink count (direct, plus shared NVSwitch links) and PCIe common ancestor."""
    count = len(handles)
    index_of_bus = {b: i for i, b in enumerate(bus_ids) if b is not None}
    direct: dict[tuple[int, int], int] = {}
    switch_links: list[int] = []
    for i, h in enumerate(handles):
        peers, to_switch = _nvlink_peers(nvml, h)
        switch_links.append(to_switch)
        for bus in peers:
            j = index_of_bus.get(bus)
            if j is not None and j != i:
                # Counted from each end; an end whose link queries failed may see fewer, so take the max.
                direct[i, j] = direct.get((i, j), 0) + 1

    links: list[Link] = []
    for i in range(count):
        for j in range(i + 1, count):
            level = _maybe(nvml, "nvmlDeviceGetTopologyCommonAncestor", handles[i], handles[j])
            from_i, from_j = direct.get((i, j), 0), direct.get((j, i), 0)
            if from_i != from_j:
                log.warning(
                    "GPU %d sees %d NVLinks to GPU %d but GPU %d sees %d; using %d",
                    i,
                    from_i,
                    j,
                    j,
                    from_j,
                    max(from_i, from_j),
                )
            nvlinks = max(from_i, from_j)
            if switch_links[i] and switch_links[j]:
                nvlinks += min(switch_links[i], switch_links[j])
            links.append(Link(i, j, nvlinks, _LEVEL_OF_NVML.get(level) if level is not None else None))
    return links


def mig_layout(nvml: ModuleType) -> tuple[tuple[str, ...] | None, ...]:
    """Per GPU, its MIG instances' UUIDs (None: MIG off): cheap enough to watch for layout changes."""
    layout = []
    for i in range(int(nvml.nvmlDeviceGetCount())):
        instances = _mig_instances(nvml, nvml.nvmlDeviceGetHandleByIndex(i))
        layout.append(None if instances is None else tuple(m.uuid or m.profile for m in instances))
    return tuple(layout)


def sample_gpus(nvml: ModuleType) -> list[GpuSample]:
    """Live SM utilization and memory per GPU; unsupported readings are None."""
    samples: list[GpuSample] = []
    for i in range(int(nvml.nvmlDeviceGetCount())):
        h = nvml.nvmlDeviceGetHandleByIndex(i)
        util = _maybe(nvml, "nvmlDeviceGetUtilizationRates", h)
        mem = _maybe(nvml, "nvmlDeviceGetMemoryInfo", h)
        samples.append(
            GpuSample(
                index=i,
                uuid=_maybe_text(nvml, "nvmlDeviceGetUUID", h),
                sm_util_percent=int(util.gpu) if util is not None else None,
                memory_used_mib=int(mem.used) // _MIB if mem is not None else None,
                memory_total_mib=int(mem.total) // _MIB if mem is not None else None,
            )
        )
    return samples
