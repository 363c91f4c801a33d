"""How the GPUs of one node are wired: a GPU per index and a link per pair (``graph`` gives it as networkx).

Every unordered GPU pair has exactly one edge carrying ``nvlinks`` (bonded GPU-to-GPU links — NVLink, or
XGMI on AMD — 0 when none) and
``pcie`` (the PCIe common-ancestor level, ``None`` when unknown). Sources: NVML (``extender.sources.nvml``),
``nvidia-smi topo -m`` text (``extender.model.smi_topo``) and the versioned JSON document below, which is
also the Node annotation ``gpu-advisor.io/topology``.

JSON document (version 1)::

    {"version": 1,
     "gpus":  [{"index": 0, "uuid": "GPU-…", "pci_bus_id": "0000:07:00.0", "product": "NVIDIA H100",
                "memory_mib": 81559, "numa_node": 0,
                "mig": null | {"instances": [{"profile": "1g.10gb", "uuid": "MIG-…", "memory_mib": 9856}]}}],
     "links": [{"a": 0, "b": 1, "gpu_links": 18, "nvlinks": 18, "pcie": "NODE"}],
     "clique": null,
     "fabric": "nvlink",         # what gpu_links counts: "nvlink", or "xgmi" on AMD
     "vendor": "amd"}            # optional: absent means NVIDIA (``extender.model.gpu_vendor``)

Only ``index`` is required per GPU, and only ``a``/``b`` per link (``gpu_links`` defaults to 0, ``pcie``
to null), so a machine can be described by hand; a pair with no link entry is taken as ``gpu_links: 0,
pcie: null``. ``mig`` is null when MIG is unknown or disabled. ``gpu_links`` counts the GPU-to-GPU
links of the node's fabric, which ``fabric`` names (NVLink, or XGMI on AMD: the two join GPUs the same
way). ``nvlinks`` is its old name: documents that have only it are read as before, and writers still
write it beside ``gpu_links`` so that a server from before the rename reads a new agent's annotation
(a mixed-version rollout) and does not take XGMI pairs for unlinked ones; ``fabric`` is ignored on read
(``vendor`` decides).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any

from extender.model.devices import (
    Gpu,
    Link,
    MigInstance,
    PcieLevel,
    TopologyError,
    gpu_from_dict,
    gpu_to_dict,
    link_from_dict,
)
from extender.model.gpu_vendor import GpuVendor, vendor_named

if TYPE_CHECKING:
    import networkx as nx  # imported on first use of ``graph``: the node agent never pays its ~20 MiB

__all__ = [
    "SCHEMA_VERSION",
    "Gpu",
    "GpuTopology",
    "Link",
    "MigInstance",
    "PcieLevel",
    "TopologyError",
]

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class _Wiring:
    """What placement depends on: the indices and every pair's link, in (a, b) order."""

    indices: tuple[int, ...]
    links: tuple[Link, ...]
    fingerprint: str = field(compare=False)


class GpuTopology:
    """The GPUs of one node and the links between every pair of them."""

    def __init__(
        self, gpus: Iterable[Gpu], links: Iterable[Link] = (), clique: str | None = None, vendor: str = "nvidia"
    ) -> None:
        try:
            self._vendor = vendor_named(vendor)
        except ValueError as exc:
            raise TopologyError(str(exc)) from None
        gpu_list = sorted(gpus, key=lambda g: g.index)
        indices = [g.index for g in gpu_list]
        if not gpu_list:
            raise TopologyError("a topology needs at least one GPU")
        if len(set(indices)) != len(indices):
            raise TopologyError(f"duplicate GPU index in {indices}")
        if any(i < 0 for i in indices):
            raise TopologyError(f"GPU indices must be ≥ 0, got {indices}")

        by_pair: dict[tuple[int, int], Link] = {}
        known = set(indices)
        for link in links:
            a, b = sorted((link.a, link.b))
            if a == b:
                raise TopologyError(f"link from GPU {a} to itself")
            if a not in known or b not in known:
                raise TopologyError(f"link {a}-{b} names a GPU that is not in the topology {indices}")
            if link.nvlinks < 0:
                raise TopologyError(f"link {a}-{b} has a negative NVLink count {link.nvlinks}")
            if (a, b) in by_pair:
                raise TopologyError(f"link {a}-{b} is listed twice")
            by_pair[a, b] = Link(a, b, link.nvlinks, link.pcie)
        ordered = tuple(by_pair.get((a, b)) or Link(a, b) for a, b in combinations(indices, 2))

        self.clique = clique
        self._by_index = {g.index: g for g in gpu_list}
        self._by_pair = {(lk.a, lk.b): lk for lk in ordered}
        self._graph: nx.Graph | None = None
        self._gpus = tuple(gpu_list)
        self._wiring = _Wiring(tuple(indices), ordered, _fingerprint(tuple(indices), ordered))

    # -- views -------------------------------------------------------------------------------------

    @property
    def vendor(self) -> GpuVendor:
        """Whose GPUs these are: the resource they are offered as and what their links are called."""
        return self._vendor

    @property
    def gpus(self) -> tuple[Gpu, ...]:
        return self._gpus

    @property
    def indices(self) -> tuple[int, ...]:
        return self._wiring.indices

    @property
    def links(self) -> tuple[Link, ...]:
        """One link per unordered pair, ordered by (a, b)."""
        return self._wiring.links

    @property
    def fingerprint(self) -> str:
        """Same wiring ⇒ same fingerprint, whatever the UUIDs, bus ids or products."""
        return self._wiring.fingerprint

    @property
    def graph(self) -> nx.Graph:
        """The topology as a networkx graph (GPU per vertex as ``gpu``, ``link`` per edge), built on first use."""
        if self._graph is None:
            import networkx as nx

            graph = nx.Graph()
            graph.add_nodes_from((g.index, {"gpu": g}) for g in self._gpus)
            graph.add_edges_from((lk.a, lk.b, {"link": lk}) for lk in self.links)
            self._graph = graph
        return self._graph

    def gpu(self, index: int) -> Gpu:
        try:
            return self._by_index[index]
        except KeyError:
            raise TopologyError(f"no GPU {index} in this topology") from None

    def link(self, a: int, b: int) -> Link:
        try:
            return self._by_pair[min(a, b), max(a, b)]
        except KeyError:
            raise TopologyError(f"no link {a}-{b} in this topology") from None

    def nvlink_islands(self) -> list[list[int]]:
        """Connected components over NVLink edges, largest first; a GPU without NVLink is its own island
        (worked out once: a topology does not change, and thousands of nodes share one)."""
        found: tuple[tuple[int, ...], ...] | None = self.__dict__.get("_islands")
        if found is None:
            found = self.__dict__["_islands"] = tuple(map(tuple, self._islands()))
        return [list(island) for island in found]

    def _islands(self) -> list[list[int]]:
        root = {i: i for i in self.indices}  # union-find: at most 16 or so GPUs, no library needed

        def find(i: int) -> int:
            while root[i] != i:
                root[i] = root[root[i]]
                i = root[i]
            return i

        for lk in self.links:
            if lk.nvlinks > 0:
                root[find(lk.a)] = find(lk.b)
        islands: dict[int, list[int]] = {}
        for i in self.indices:
            islands.setdefault(find(i), []).append(i)
        return sorted(islands.values(), key=lambda c: (-len(c), c[0]))

    def numa_groups(self) -> dict[int | None, list[int]]:
        """GPUs by host NUMA node; key None holds the GPUs whose NUMA node is unknown."""
        groups: dict[int | None, list[int]] = {}
        for gpu in self._gpus:
            groups.setdefault(gpu.numa_node, []).append(gpu.index)
        return dict(sorted(groups.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)))

    # -- equality and JSON ------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GpuTopology):
            return NotImplemented
        mine = (self._gpus, self._wiring, self.clique, self._vendor)
        return mine == (other._gpus, other._wiring, other.clique, other._vendor)

    def __hash__(self) -> int:
        return hash((self._gpus, self._wiring, self.clique, self._vendor))

    def __repr__(self) -> str:
        return f"GpuTopology({len(self._gpus)} GPUs, fingerprint={self.fingerprint[:12]})"

    def to_dict(self) -> dict[str, Any]:
        doc = {
            "version": SCHEMA_VERSION,
            "gpus": [gpu_to_dict(g) for g in self._gpus],
            "links": [
                {
                    "a": lk.a,
                    "b": lk.b,
                    "gpu_links": lk.nvlinks,
                    "nvlinks": lk.nvlinks,
                    "pcie": lk.pcie.value if lk.pcie else None,
                }
                for lk in self.links
            ],
            "clique": self.clique,
            "fabric": self._vendor.link.lower(),
        }
        if self._vendor.name != "nvidia":  # written only when needed: NVIDIA documents stay as they were
            doc["vendor"] = self._vendor.name
        return doc

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, separators=None if indent else (",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> GpuTopology:
        try:
            doc = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise TopologyError(f"topology JSON is not valid JSON: {exc}") from None
        return cls.from_dict(doc)

    @classmethod
    def from_dict(cls, doc: Any) -> GpuTopology:
        if not isinstance(doc, Mapping):
            raise TopologyError("topology JSON must be an object with 'gpus' and 'links'")
        version = doc.get("version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise TopologyError(f"topology JSON version {version!r} is not supported (this reads {SCHEMA_VERSION})")
        gpus_doc = doc.get("gpus")
        if not isinstance(gpus_doc, list) or not gpus_doc:
            raise TopologyError("topology JSON needs a non-empty list 'gpus'")
        links_doc = doc.get("links", [])
        if not isinstance(links_doc, list):
            raise TopologyError("topology JSON 'links' must be a list")
        clique = doc.get("clique")
        if clique is not None and not isinstance(clique, str):
            raise TopologyError("topology JSON 'clique' must be a string or null")
        vendor = doc.get("vendor") or "nvidia"
        if not isinstance(vendor, str):
            raise TopologyError("topology JSON 'vendor' must be a string such as 'nvidia' or 'amd'")
        gpus = [gpu_from_dict(g, n) for n, g in enumerate(gpus_doc)]
        links = [link_from_dict(lk, n) for n, lk in enumerate(links_doc)]
        return cls(gpus, links, clique=clique, vendor=vendor)


def _fingerprint(indices: tuple[int, ...], links: tuple[Link, ...]) -> str:
    canon = json.dumps(
        [list(indices), [[lk.a, lk.b, lk.nvlinks, lk.pcie.value if lk.pcie else None] for lk in links]],
        separators=(",", ":"),
    )
    return hashlib.sha256(canon.encode()).hexdigest()[:32]
