"""A stand-in for the ``pynvml`` module: the functions gpu-advisor calls, with the same names, the same
argument order and pynvml's own error classes, answering from a description of a real machine.

Only the outermost boundary (the NVML C library) is replaced; discovery logic runs unchanged.
"""

from __future__ import annotations

import types
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pynvml

SWITCH = pynvml.NVML_NVLINK_DEVICE_TYPE_SWITCH
GPU = pynvml.NVML_NVLINK_DEVICE_TYPE_GPU
_MIB = 1024 * 1024
_LEVEL = {"INTERNAL": 0, "PIX": 10, "PXB": 20, "PHB": 30, "NODE": 40, "SYS": 50}


@dataclass
class FakeMig:
    profile: str
    uuid: str
    memory_mib: int


@dataclass
class FakeGpu:
    name: str
    uuid: str
    bus_id: str  # as NVML writes it: 00000000:06:00.0
    memory_mib: int
    numa_node: int
    # One entry per active NVLink: (remote device type, remote bus id or None for a switch).
    nvlinks: list[tuple[int, str | None]] = field(default_factory=list)
    nvlink_supported: bool = True
    mig: list[FakeMig] | None = None
    sm_util: int = 0
    used_mib: int = 0
    # NVLink fabric registration (cluster UUID, clique id, NVML fabric state); None: NotSupported.
    fabric: tuple[str, int, int] | None = None


@dataclass
class FakeMachine:
    gpus: list[FakeGpu]
    pcie: dict[tuple[int, int], str]  # level per pair (a < b)

    def write_sysfs(self, root: Path) -> Path:
        """The ``/sys/bus/pci/devices/<bus>/numa_node`` files the kernel would show."""
        for gpu in self.gpus:
            domain, rest = gpu.bus_id.split(":", 1)
            folder = root / "bus/pci/devices" / f"{int(domain, 16):04x}:{rest.lower()}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "numa_node").write_text(f"{gpu.numa_node}\n")
        return root


@dataclass(frozen=True)
class _Handle:
    gpu: int
    mig: int | None = None


class _Struct:
    def __init__(self, **values: object) -> None:
        self.__dict__.update(values)


def _error(code: int) -> pynvml.NVMLError:
    return pynvml.NVMLError(code)  # pynvml maps the code to its subclass, e.g. NVMLError_NotSupported


class _FakeNvml:
    """The NVML calls the code makes, answered from a machine description (one method each, named
    as pynvml names them, so the module built below reads like the real one)."""

    def __init__(self, machine: FakeMachine, library_missing: bool) -> None:
        self.machine = machine
        self.gpus = machine.gpus
        self.library_missing = library_missing

    def _gpu(self, h: _Handle) -> FakeGpu:
        return self.gpus[h.gpu]

    def _mig(self, h: _Handle) -> FakeMig | None:
        g = self._gpu(h)
        return None if h.mig is None or g.mig is None else g.mig[h.mig]

    def nvmlInit(self) -> None:
        if self.library_missing:
            raise _error(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> _Handle:
        if not 0 <= i < len(self.gpus):
            raise _error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return _Handle(i)

    def nvmlDeviceGetName(self, h: _Handle) -> str:
        mig = self._mig(h)
        return self._gpu(h).name if mig is None else f"{self._gpu(h).name} MIG {mig.profile}"

    def nvmlDeviceGetUUID(self, h: _Handle) -> str:
        mig = self._mig(h)
        return self._gpu(h).uuid if mig is None else mig.uuid

    def nvmlDeviceGetPciInfo(self, h: _Handle) -> _Struct:
        bus = self._gpu(h).bus_id
        return _Struct(busId=bus.encode(), busIdLegacy=bus[4:].encode())

    def nvmlDeviceGetMemoryInfo(self, h: _Handle) -> _Struct:
        g, mig = self._gpu(h), self._mig(h)
        total = g.memory_mib if mig is None else mig.memory_mib
        used = g.used_mib if mig is None else 0
        return _Struct(total=total * _MIB, used=used * _MIB, free=(total - used) * _MIB)

    def nvmlDeviceGetUtilizationRates(self, h: _Handle) -> _Struct:
        return _Struct(gpu=self._gpu(h).sm_util, memory=0)

    def nvmlDeviceGetTopologyCommonAncestor(self, a: _Handle, b: _Handle) -> int:
        key = (min(a.gpu, b.gpu), max(a.gpu, b.gpu))
        if key not in self.machine.pcie:
            raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return _LEVEL[self.machine.pcie[key]]

    def _link(self, h: _Handle, link: int) -> tuple[int, str | None]:
        g = self._gpu(h)
        if not g.nvlink_supported:
            raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        if link >= max(len(g.nvlinks), 1) or link >= pynvml.NVML_NVLINK_MAX_LINKS:
            raise _error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        if link >= len(g.nvlinks):
            raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return g.nvlinks[link]

    def nvmlDeviceGetNvLinkState(self, h: _Handle, link: int) -> int:
        self._link(h, link)
        return 1

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, h: _Handle, link: int) -> int:
        return self._link(h, link)[0]

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h: _Handle, link: int) -> _Struct:
        _kind, bus = self._link(h, link)
        if bus is None:  # a switch's PCI info is not a GPU's; real NVML returns the switch's id
            return _Struct(busId=b"00000000:FF:00.0")
        return _Struct(busId=bus.encode())

    def nvmlDeviceGetMigMode(self, h: _Handle) -> list[int]:
        g = self._gpu(h)
        if g.mig is None and "A100" not in g.name and "H100" not in g.name:
            raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        on = int(g.mig is not None)
        return [on, on]

    def nvmlDeviceGetMaxMigDeviceCount(self, h: _Handle) -> int:
        return 7

    def nvmlDeviceGetGpuFabricInfo(self, h: _Handle, info: pynvml.c_nvmlGpuFabricInfo_t) -> int:
        fabric = self._gpu(h).fabric
        if fabric is None:
            raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        cluster, clique, state = fabric
        info.clusterUuid[:] = list(uuid.UUID(cluster).bytes)
        info.cliqueId, info.state, info.status = clique, state, pynvml.NVML_SUCCESS
        return 0  # NVML_SUCCESS

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: _Handle, slot: int) -> _Handle:
        g = self._gpu(h)
        if g.mig is None or slot >= len(g.mig):
            raise _error(pynvml.NVML_ERROR_NOT_FOUND)
        return _Handle(h.gpu, slot)


def fake_pynvml(machine: FakeMachine, *, library_missing: bool = False) -> types.ModuleType:
    """A stand-in for the ``pynvml`` module, answering from ``machine``."""
    m = types.ModuleType("pynvml")
    m.NVMLError = pynvml.NVMLError  # type: ignore[attr-defined]
    m.NVML_NVLINK_MAX_LINKS = pynvml.NVML_NVLINK_MAX_LINKS  # type: ignore[attr-defined]
    m.c_nvmlGpuFabricInfo_t = pynvml.c_nvmlGpuFabricInfo_t  # type: ignore[attr-defined]
    fake = _FakeNvml(machine, library_missing)
    for name in dir(fake):
        if name.startswith("nvml"):
            setattr(m, name, getattr(fake, name))
    return m
