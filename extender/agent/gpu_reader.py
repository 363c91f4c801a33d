"""Which library the node agent reads its GPUs through, as data: NVML on NVIDIA nodes, ``amdsmi`` on AMD
Instinct nodes. Each names the resource its device plugin offers (whose kubelet allocations mark GPUs
held) and the series names its ``/metrics`` uses (DCGM exporter's, or AMD device metrics exporter's)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from extender.agent import amdsmi_reader
from extender.model.topology import GpuTopology
from extender.sources import nvml
from extender.sources.nvml import GpuSample

__all__ = ["AMDSMI", "NVML", "READERS", "GpuReader"]


@dataclass(frozen=True)
class GpuReader:
    library: str  # as messages name it
    resource: str
    load: Callable[[], ModuleType]  # import and initialise the library, or raise a SourceError
    layout: Callable[[ModuleType], tuple[Any, ...]]  # cheap to watch: the wiring is read again when it changes
    discover: Callable[[ModuleType, Path], GpuTopology]
    sample: Callable[[ModuleType], list[GpuSample]]
    # /metrics series for utilization, VRAM used and VRAM free (MiB), as this vendor's exporter names them.
    series: tuple[str, str, str]
    device_prefix: str  # the ``device`` label: nvidia3 as DCGM writes it, card3 as the amdgpu driver names it


def _amd_topology(amdsmi: ModuleType, _sysfs: Path) -> GpuTopology:
    return amdsmi_reader.discover_amd_topology(amdsmi)  # amdsmi knows each GPU's NUMA node itself


NVML = GpuReader(
    "NVML",
    "nvidia.com/gpu",
    nvml.load_nvml,
    nvml.mig_layout,
    nvml.discover_topology,
    nvml.sample_gpus,
    ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"),
    "nvidia",
)
AMDSMI = GpuReader(
    "amdsmi",
    "amd.com/gpu",
    amdsmi_reader.load_amdsmi,
    amdsmi_reader.partition_modes,
    _amd_topology,
    amdsmi_reader.sample_amd_gpus,
    ("gpu_gfx_activity", "gpu_used_vram", "gpu_free_vram"),
    "card",
)
READERS = {"nvidia": NVML, "amd": AMDSMI}
