"""A stand-in for the ``amdsmi`` module: the functions gpu-advisor calls, with the same names, argument
order, return shapes (dicts, bytes, mode strings) and exception class, answering from a description of
a real AMD machine. Only the library is replaced; discovery logic runs unchanged.

The machines are written out by hand from what each source says of its hardware (an MI300X OAM board:
eight GPUs, every pair one XGMI hop, four per socket), not derived from the text fixtures, so comparing
the two is a real check.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from enum import IntEnum
from itertools import combinations

_GIB = 1024**3


class AmdSmiException(Exception):
    """amdsmi's base exception; the real library raises subclasses (AmdSmiLibraryException, …)."""


class AmdSmiLinkType(IntEnum):  # amdsmi.h, amdsmi_link_type_t
    AMDSMI_LINK_TYPE_INTERNAL = 0
    AMDSMI_LINK_TYPE_PCIE = 1
    AMDSMI_LINK_TYPE_XGMI = 2
    AMDSMI_LINK_TYPE_NOT_APPLICABLE = 3
    AMDSMI_LINK_TYPE_UNKNOWN = 4


class AmdSmiMemoryType(IntEnum):
    VRAM = 0
    VIS_VRAM = 1
    GTT = 2


@dataclass
class FakeAmdGpu:
    market_name: str
    uuid: str
    bdf: str  # as amdsmi writes it: 0000:0c:00.0
    vram_bytes: int
    numa_node: int | None  # None: the library answers NOT_SUPPORTED
    compute_partition: str = "SPX"
    memory_partition: str = "NPS1"
    gfx_activity: int | str = 0  # "N/A" where the ASIC does not report it
    vram_used_bytes: int = 0


@dataclass
class FakeAmdMachine:
    gpus: list[FakeAmdGpu]
    xgmi: set[tuple[int, int]]  # pairs (a < b) joined by XGMI; every other pair is PCIe
    pcie_hops: dict[tuple[int, int], int] = field(default_factory=dict)  # 2 same socket, 3 across


@dataclass(frozen=True)
class _Handle:
    index: int


def fake_amdsmi(machine: FakeAmdMachine, driver_missing: bool = False) -> types.ModuleType:
    module = types.ModuleType("amdsmi")
    gpus = machine.gpus

    def gpu(handle: _Handle) -> FakeAmdGpu:
        if not isinstance(handle, _Handle) or not 0 <= handle.index < len(gpus):
            raise AmdSmiException("AMDSMI_STATUS_INVAL")
        return gpus[handle.index]

    def init(*_flags: object) -> None:
        if driver_missing:
            raise AmdSmiException("AMDSMI_STATUS_DRIVER_NOT_LOADED")

    def numa(handle: _Handle) -> int:
        value = gpu(handle).numa_node
        if value is None:
            raise AmdSmiException("AMDSMI_STATUS_NOT_SUPPORTED")
        return value

    def link_type(a: _Handle, b: _Handle) -> dict[str, int]:
        gpu(a), gpu(b)  # an unknown handle raises, as the library does
        i, j = sorted((a.index, b.index))
        if (i, j) in machine.xgmi:
            return {"hops": 1, "type": int(AmdSmiLinkType.AMDSMI_LINK_TYPE_XGMI)}
        return {"hops": machine.pcie_hops.get((i, j), 2), "type": int(AmdSmiLinkType.AMDSMI_LINK_TYPE_PCIE)}

    def memory(kind: str) -> object:
        def read(handle: _Handle, memory_type: AmdSmiMemoryType) -> int:
            if memory_type != AmdSmiMemoryType.VRAM:
                raise AmdSmiException("AMDSMI_STATUS_NOT_SUPPORTED")
            return gpu(handle).vram_bytes if kind == "total" else gpu(handle).vram_used_bytes

        return read

    module.AmdSmiException = AmdSmiException  # type: ignore[attr-defined]
    module.AmdSmiLinkType = AmdSmiLinkType  # type: ignore[attr-defined]
    module.AmdSmiMemoryType = AmdSmiMemoryType  # type: ignore[attr-defined]
    module.amdsmi_init = init  # type: ignore[attr-defined]
    module.amdsmi_shut_down = lambda: None  # type: ignore[attr-defined]
    module.amdsmi_get_processor_handles = lambda: [_Handle(i) for i in range(len(gpus))]  # type: ignore[attr-defined]
    module.amdsmi_get_gpu_device_bdf = lambda h: gpu(h).bdf  # type: ignore[attr-defined]
    module.amdsmi_get_gpu_device_uuid = lambda h: gpu(h).uuid  # type: ignore[attr-defined]
    module.amdsmi_get_gpu_asic_info = lambda h: {"market_name": gpu(h).market_name, "vendor_id": "0x1002"}  # type: ignore[attr-defined]
    module.amdsmi_get_gpu_memory_total = memory("total")  # type: ignore[attr-defined]
    module.amdsmi_get_gpu_memory_usage = memory("used")  # type: ignore[attr-defined]
    module.amdsmi_topo_get_numa_node_number = numa  # type: ignore[attr-defined]
    module.amdsmi_topo_get_link_type = link_type  # type: ignore[attr-defined]
    module.amdsmi_get_gpu_compute_partition = lambda h: gpu(h).compute_partition  # type: ignore[attr-defined]
    module.amdsmi_get_gpu_memory_partition = lambda h: gpu(h).memory_partition  # type: ignore[attr-defined]
    module.amdsmi_get_gpu_activity = lambda h: {  # type: ignore[attr-defined]
        "gfx_activity": gpu(h).gfx_activity,
        "umc_activity": 0,
        "mm_activity": "N/A",
    }
    return module


def _all_pairs(n: int) -> set[tuple[int, int]]:
    return set(combinations(range(n), 2))


def mi300x_oam(numa_known: bool = True) -> FakeAmdMachine:
    """An 8× MI300X OAM board: every GPU pair one XGMI hop; GPUs 0-3 on socket 0, 4-7 on socket 1."""
    buses = ["0c", "22", "38", "5c", "9f", "af", "bf", "df"]
    gpus = [
        FakeAmdGpu(
            "AMD Instinct MI300X",
            f"5eff74a1-0000-1000-80{i:02x}-3c9a2b7d1e{i:02x}",
            f"0000:{bus}:00.0",
            192 * _GIB,
            (0 if i < 4 else 1) if numa_known else None,
        )
        for i, bus in enumerate(buses)
    ]
    return FakeAmdMachine(gpus, _all_pairs(8))


def mi355x_oam() -> FakeAmdMachine:
    """An 8× MI355X OAM board as ``amd-smi topology`` lists it (bus ids in its order), all on XGMI."""
    buses = ["0d", "26", "5d", "75", "8e", "a7", "dc", "f4"]
    gpus = [
        FakeAmdGpu(
            "AMD Instinct MI355X",
            f"f5ff75a3-0000-1000-80{i:02x}-0a1b2c3d4e{i:02x}",
            f"0000:{bus}:00.0",
            288 * _GIB,
            0 if i < 4 else 1,
        )
        for i, bus in enumerate(buses)
    ]
    return FakeAmdMachine(gpus, _all_pairs(8))


def four_pcie_one_per_numa_node() -> FakeAmdMachine:
    """Four PCIe GPUs, each on its own NUMA node (nodes 0, 1, 3, 2 in GPU order), no XGMI."""
    gpus = [
        FakeAmdGpu(
            "AMD Instinct (PCIe card)", f"0f0a738c-0000-1000-8000-00000000000{i}", f"0000:{bus}:00.0", 32 * _GIB, numa
        )
        for i, (bus, numa) in enumerate(zip(["03", "43", "83", "c3"], [0, 1, 3, 2], strict=True))
    ]
    return FakeAmdMachine(gpus, set(), {pair: 3 for pair in _all_pairs(4)})
