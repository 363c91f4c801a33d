"""A GB200 NVL72 rack for the simulated cluster: 18 compute trays of 4 GB200 GPUs, one NVLink clique.

Within a tray every GPU pair is joined through the rack's NVLink switches (18 NVLink 5 links per GPU);
across trays the same fabric joins them, which the per-node topology cannot show: GPU Feature
Discovery's ``nvidia.com/gpu.clique`` label (``<cluster UUID>.<clique id>``) says which trays share it.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

__all__ = ["NVL72_CLIQUE", "NVL72_PRODUCT", "nvl72_rack"]

NVL72_PRODUCT = "NVIDIA-GB200"
NVL72_CLIQUE = "4fc6b5a0-6d0b-4c7e-9a57-2c1f3e8d9b21.32766"  # as GFD writes it: cluster UUID . clique id
_MEMORY_MIB = 189_471  # what NVML reports for one GB200


def _tray_topology(tray: int, clique: str) -> dict[str, Any]:
    gpus = [
        {
            "index": i,
            "uuid": f"GPU-nvl72-{tray:02d}-{i}",
            "pci_bus_id": f"0000:{0x01 + i * 0x10:02x}:00.0",
            "product": "NVIDIA GB200",
            "memory_mib": _MEMORY_MIB,
            "numa_node": i // 2,  # two Grace-attached pairs per tray
        }
        for i in range(4)
    ]
    links = [{"a": a, "b": b, "nvlinks": 18, "pcie": "SYS"} for a, b in combinations(range(4), 2)]
    return {"version": 1, "gpus": gpus, "links": links, "clique": clique}


def nvl72_rack(prefix: str = "nvl72-tray", trays: int = 18, clique: str = NVL72_CLIQUE) -> list[dict[str, Any]]:
    """The rack's trays as snapshot node entries (``extender.sources.snapshot``), every GPU free."""
    labels = {
        "nvidia.com/gpu.product": NVL72_PRODUCT,
        "nvidia.com/gpu.memory": str(_MEMORY_MIB),
        "nvidia.com/gpu.clique": clique,
    }
    return [
        {"name": f"{prefix}-{t:02d}", "topology": _tray_topology(t, clique), "labels": dict(labels)}
        for t in range(1, trays + 1)
    ]
