"""The parts a topology is made of: one GPU (with its MIG instances) and the link between two GPUs,
and their forms in the topology JSON document (``extender.model.topology`` describes it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from extender.errors import InputError

__all__ = ["Gpu", "Link", "MigInstance", "PcieLevel", "TopologyError", "gpu_from_dict", "gpu_to_dict", "link_from_dict"]


class TopologyError(InputError):
    """A topology source could not be read; the message says what and where."""


class PcieLevel(StrEnum):
    """NVML's ``nvmlDeviceGetTopologyCommonAncestor`` levels, nearest first."""

    INTERNAL = "INTERNAL"
    PIX = "PIX"
    PXB = "PXB"
    PHB = "PHB"
    NODE = "NODE"
    SYS = "SYS"


@dataclass(frozen=True)
class MigInstance:
    profile: str
    uuid: str | None = None
    memory_mib: int | None = None


@dataclass(frozen=True)
class Gpu:
    index: int
    uuid: str | None = None
    pci_bus_id: str | None = None
    product: str | None = None
    memory_mib: int | None = None
    numa_node: int | None = None
    # None: MIG unknown or disabled; a tuple (possibly empty): MIG enabled with these instances.
    mig: tuple[MigInstance, ...] | None = None


@dataclass(frozen=True, order=True)
class Link:
    a: int
    b: int
    nvlinks: int = 0
    pcie: PcieLevel | None = None


def gpu_to_dict(gpu: Gpu) -> dict[str, Any]:
    mig = None
    if gpu.mig is not None:
        mig = {"instances": [{"profile": m.profile, "uuid": m.uuid, "memory_mib": m.memory_mib} for m in gpu.mig]}
    return {
        "index": gpu.index,
        "uuid": gpu.uuid,
        "pci_bus_id": gpu.pci_bus_id,
        "product": gpu.product,
        "memory_mib": gpu.memory_mib,
        "numa_node": gpu.numa_node,
        "mig": mig,
    }


def _typed(doc: Mapping[str, Any], key: str, kind: type, where: str, required: bool = False) -> Any:
    value = doc.get(key)
    if value is None:
        if required:
            raise TopologyError(f"{where}: '{key}' is required")
        return None
    # bool is an int in Python; a GPU index of `true` is a mistake, not 1.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TopologyError(f"{where}: '{key}' must be {kind.__name__}, got {value!r}")
    return value


def gpu_from_dict(doc: Any, n: int) -> Gpu:
    where = f"gpus[{n}]"
    if not isinstance(doc, Mapping):
        raise TopologyError(f"{where} must be an object")
    mig_doc = doc.get("mig")
    mig: tuple[MigInstance, ...] | None = None
    if mig_doc is not None:
        if not isinstance(mig_doc, Mapping) or not isinstance(mig_doc.get("instances", []), list):
            raise TopologyError(f"{where}.mig must be an object with a list 'instances'")
        mig = tuple(
            MigInstance(
                profile=_typed(m, "profile", str, f"{where}.mig.instances[{j}]", required=True),
                uuid=_typed(m, "uuid", str, f"{where}.mig.instances[{j}]"),
                memory_mib=_typed(m, "memory_mib", int, f"{where}.mig.instances[{j}]"),
            )
            for j, m in enumerate(mig_doc.get("instances", []))
        )
    return Gpu(
        index=_typed(doc, "index", int, where, required=True),
        uuid=_typed(doc, "uuid", str, where),
        pci_bus_id=_typed(doc, "pci_bus_id", str, where),
        product=_typed(doc, "product", str, where),
        memory_mib=_typed(doc, "memory_mib", int, where),
        numa_node=_typed(doc, "numa_node", int, where),
        mig=mig,
    )


def link_from_dict(doc: Any, n: int) -> Link:
    where = f"links[{n}]"
    if not isinstance(doc, Mapping):
        raise TopologyError(f"{where} must be an object")
    pcie_raw = _typed(doc, "pcie", str, where)
    pcie = None
    if pcie_raw is not None:
        try:
            pcie = PcieLevel(pcie_raw.upper())
        except ValueError:
            levels = ", ".join(p.value for p in PcieLevel)
            raise TopologyError(f"{where}: pcie {pcie_raw!r} is not one of {levels} or null") from None
    # ``gpu_links`` names the count whatever the fabric (NVLink, XGMI); ``nvlinks`` is what documents
    # before it wrote, and what servers before it read, so writers keep both for now (``to_dict``).
    links = _typed(doc, "gpu_links", int, where)
    legacy = _typed(doc, "nvlinks", int, where)
    if links is not None and legacy is not None and links != legacy:
        raise TopologyError(f"{where}: gpu_links {links} and nvlinks {legacy} disagree (nvlinks is its old name)")
    return Link(
        a=_typed(doc, "a", int, where, required=True),
        b=_typed(doc, "b", int, where, required=True),
        nvlinks=(links if links is not None else legacy) or 0,
        pcie=pcie,
    )
