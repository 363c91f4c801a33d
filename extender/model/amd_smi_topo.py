"""Read the text of ``rocm-smi --showtopo`` and ``amd-smi topology`` into a :class:`GpuTopology`.

Both print one GPU-by-GPU table per property. ``rocm-smi`` titles them ``=== Weight between two GPUs
===`` and names GPUs ``GPU0``…; ``amd-smi`` titles them ``WEIGHT TABLE:`` and names GPUs by PCI bus id,
in the order it numbers them. What is read:

- **Link Type** (``XGMI`` or ``PCIE``; the only table required): an XGMI pair becomes one link in
  ``nvlinks``, the field that counts a pair's GPU-to-GPU links whichever vendor's they are.
- **Numa Nodes** (``rocm-smi`` only): each GPU's NUMA node; two GPUs on one node are ``NODE`` apart on
  PCIe, on two nodes ``SYS``, as in ``nvidia-smi topo -m``.
- **Hops**, where NUMA nodes are not printed: AMD documents 2 as "PCIe within one CPU NUMA node"
  (``NODE``) and 3 as "across both CPU sockets" (``SYS``); 1 (XGMI) says nothing of PCIe.

Weights are not needed: AMD derives them from the same link type and hops (15 per XGMI hop).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from extender.model.pasted_text import normalize_text
from extender.model.topology import Gpu, GpuTopology, Link, PcieLevel, TopologyError

__all__ = ["amd_pair_link", "is_amd_topology_text", "parse_amd_topology"]

_ROCM_TITLE = re.compile(r"^=+\s*(.+?)\s*=+$")
_AMD_TITLE = re.compile(r"^([A-Z][A-Z0-9 /-]*?) TABLE:$")
_ROCM_GPU = re.compile(r"^GPU(\d+)$")
_BUS_ID = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_NUMA = re.compile(r"^GPU\s*\[?(\d+)\]?\s*:\s*\(Topology\)\s*Numa Node:\s*(-?\d+)\s*$")
_DIAGONAL = {"0", "SELF", "X"}
# Table titles as each tool prints them → the property they hold.
_KINDS = {
    "Link Type between two GPUs": "type",
    "LINK TYPE": "type",
    "Hops between two GPUs": "hops",
    "HOPS": "hops",
}


@dataclass
class _Table:
    title_line: int
    columns: list[str]
    rows: dict[str, tuple[int, list[str]]]


def is_amd_topology_text(text: str) -> bool:
    """Does this look like ``rocm-smi --showtopo`` or ``amd-smi topology`` rather than ``nvidia-smi``?"""
    return "Link Type between two GPUs" in text or "LINK TYPE TABLE:" in text


def parse_amd_topology(text: str) -> GpuTopology:
    """Parse either tool's text; raise :class:`TopologyError` naming the offending line."""
    lines = [line.rstrip() for line in normalize_text(text).splitlines()]
    tables = dict(_tables(lines))
    if "type" not in tables:
        raise TopologyError(
            "not rocm-smi --showtopo or amd-smi topology text: no 'Link Type between two GPUs' "
            "or 'LINK TYPE TABLE:' table was found"
        )
    names = tables["type"].columns
    bus_ids = all(_BUS_ID.match(n) for n in names)
    if not bus_ids and [n for n in names] != [f"GPU{i}" for i in range(len(names))]:
        raise TopologyError(
            f"line {tables['type'].title_line + 2}: GPU columns must be GPU0..GPUn or PCI bus ids, got {names}"
        )
    for kind, table in tables.items():
        if table.columns != names:
            raise TopologyError(f"line {table.title_line + 2}: the {kind} table names other GPUs than the link types")
    numa = _numa_nodes(lines, len(names))
    gpus = [Gpu(index=i, pci_bus_id=name if bus_ids else None, numa_node=numa.get(i)) for i, name in enumerate(names)]
    links = [_link(i, j, names, tables, numa) for i in range(len(names)) for j in range(i + 1, len(names))]
    return GpuTopology(gpus, links, vendor="amd")


def _tables(lines: list[str]) -> Iterator[tuple[str, _Table]]:
    titles = [(n, _title(line)) for n, line in enumerate(lines)]
    starts = [(n, t) for n, t in titles if t is not None]
    for k, (at, title) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
        kind = _KINDS.get(title)
        body = [(n, lines[n].split()) for n in range(at + 1, end) if lines[n].strip()]
        if kind is None or not body:
            continue
        columns = body[0][1]
        rows: dict[str, tuple[int, list[str]]] = {}
        for n, tokens in body[1:]:
            if tokens[0] not in columns:
                break  # a trailer such as "End of ROCm SMI Log" or a legend
            if tokens[0] in rows:
                raise TopologyError(f"line {n + 1}: a second row for {tokens[0]}")
            if len(tokens) != len(columns) + 1:
                raise TopologyError(
                    f"line {n + 1}: {tokens[0]} row has {len(tokens) - 1} cells but the header names {len(columns)}"
                )
            rows[tokens[0]] = (n, tokens[1:])
        missing = [c for c in columns if c not in rows]
        if missing:
            raise TopologyError(f"line {at + 1}: the {title} table has no row for {', '.join(missing)}")
        yield kind, _Table(at, columns, rows)


def _title(line: str) -> str | None:
    stripped = line.strip()
    if (m := _ROCM_TITLE.match(stripped)) and any(c.isalpha() for c in m.group(1)):
        return m.group(1)
    if m := _AMD_TITLE.match(stripped):
        return m.group(1)
    return None


def _numa_nodes(lines: list[str], count: int) -> dict[int, int]:
    found: dict[int, int] = {}
    for n, line in enumerate(lines):
        if m := _NUMA.match(line.strip()):
            gpu, node = int(m.group(1)), int(m.group(2))
            if gpu >= count:
                raise TopologyError(f"line {n + 1}: NUMA node of GPU[{gpu}], but the tables name {count} GPUs")
            if node >= 0:  # rocm-smi prints -1 where the kernel knows no NUMA node
                found[gpu] = node
    return found


def _cell(table: _Table, names: list[str], i: int, j: int) -> tuple[str, int]:
    line_no, cells = table.rows[names[i]]
    return cells[j].upper(), line_no + 1


def _link(i: int, j: int, names: list[str], tables: dict[str, _Table], numa: dict[int, int]) -> Link:
    kind, line_no = _cell(tables["type"], names, i, j)
    back, _ = _cell(tables["type"], names, j, i)
    if kind != back:
        raise TopologyError(
            f"line {line_no}: link types are not symmetric: {names[i]}→{names[j]} is {kind}, back {back}"
        )
    if kind in _DIAGONAL:
        raise TopologyError(f"line {line_no}: {names[i]}→{names[j]} is {kind}; that belongs on the diagonal only")
    if kind not in ("XGMI", "PCIE"):
        raise TopologyError(f"line {line_no}: link type {kind!r} between {names[i]} and {names[j]} is not XGMI or PCIE")
    hops = _cell(tables["hops"], names, i, j)[0] if "hops" in tables else None
    return amd_pair_link(i, j, kind == "XGMI", numa.get(i), numa.get(j), int(hops) if hops and hops.isdigit() else None)


def amd_pair_link(i: int, j: int, xgmi: bool, numa_i: int | None, numa_j: int | None, hops: int | None) -> Link:
    """One GPU pair as AMD's tools and library describe it (link type, NUMA nodes, hops) → a :class:`Link`.

    Shared by the text parsers and the ``amdsmi`` reader, so both give the same graph."""
    if numa_i is not None and numa_j is not None:
        pcie: PcieLevel | None = PcieLevel.NODE if numa_i == numa_j else PcieLevel.SYS
    elif not xgmi:
        pcie = {2: PcieLevel.NODE, 3: PcieLevel.SYS}.get(hops or 0)
    else:
        pcie = None  # hops is 1 for every XGMI pair: it says nothing of the PCIe path
    return Link(i, j, 1 if xgmi else 0, pcie)
