"""Read the text of ``nvidia-smi topo -m`` into a :class:`GpuTopology`.

Real outputs differ in many ways, all of which are accepted: tabs or runs of spaces, ANSI underline
escapes around the header, a shell prompt line above it, NIC columns named ``NIC0`` (with a trailing
``NIC Legend``) or directly (``mlx5_0``), legacy ``SOC`` for ``SYS``, the trailing ``CPU Affinity`` /
``NUMA Affinity`` / ``GPU NUMA ID`` columns in any subset, and the legend blocks after the matrix.

The text shows ``NV#`` instead of the PCIe level for NVLink pairs, so that level is inferred from host
affinity: same NUMA node → NODE, different → SYS, unknown → unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from extender.model.pasted_text import decode_text, normalize_text, split_header, split_row
from extender.model.topology import Gpu, GpuTopology, Link, PcieLevel, TopologyError

__all__ = ["parse_topo_matrix", "parse_topology_bytes", "parse_topology_text"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_GPU = re.compile(r"^GPU(\d+)$")
_NV = re.compile(r"^NV(\d+)$")
_LEVELS = {"PIX", "PXB", "PHB", "NODE", "SYS", "SOC"}
# The trailing columns nvidia-smi has printed over the years, as they appear in the header.
_TRAILING = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_CPU_LIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


@dataclass
class _Row:
    line_no: int
    cells: list[str]
    trailing: dict[str, str]


def parse_topo_matrix(text: str) -> GpuTopology:
    """Parse ``nvidia-smi topo -m`` output; raise :class:`TopologyError` naming the offending line.

    AMD's ``rocm-smi --showtopo`` and ``amd-smi topology`` text is handed to ``amd_smi_topo``, so every
    reader of a pasted or bundled machine takes either vendor's text."""
    from extender.model.amd_smi_topo import is_amd_topology_text, parse_amd_topology

    if is_amd_topology_text(text):
        return parse_amd_topology(text)
    if "\x00" in text:
        line_no = text[: text.index("\x00")].count("\n") + 1
        raise TopologyError(f"line {line_no}: a NUL character; UTF-16 text read as if it were UTF-8?")
    lines = [_ANSI.sub("", raw).rstrip() for raw in normalize_text(text).splitlines()]
    header_at = next((n for n, line in enumerate(lines) if split_header(line.split()[:1])[:1] == ["GPU0"]), None)
    if header_at is None:
        raise TopologyError("not nvidia-smi topo -m text: no header line whose first column is GPU0 was found")
    devices, trailing_names = _parse_header(lines[header_at], header_at + 1)
    gpu_columns = {name: int(m.group(1)) for name in devices if (m := _GPU.match(name))}

    rows: dict[str, _Row] = {}
    for n in range(header_at + 1, len(lines)):
        line_no, tokens = n + 1, lines[n].split()
        if not tokens:
            if rows:
                break
            continue
        if tokens[0] not in devices:
            # Cells run together where tabs were lost: "GPU1NV2 X" is GPU1's row all the same.
            tokens = split_row(tokens, devices, trailing_names) or tokens
        if tokens[0] not in devices:
            if tokens[0].rstrip(":") == "Legend" or rows.keys() >= gpu_columns.keys():
                break
            raise TopologyError(
                f"line {line_no}: expected a matrix row starting with one of {', '.join(devices)}, got {tokens[0]!r}"
            )
        if tokens[0] in rows:
            raise TopologyError(f"line {line_no}: a second row for {tokens[0]}")
        if tokens[0] in gpu_columns:
            rows[tokens[0]] = _gpu_row(tokens, devices, trailing_names, line_no, lines[n])
        else:
            rows[tokens[0]] = _Row(line_no, [], {})  # NIC rows carry nothing we keep
    missing = [name for name in gpu_columns if name not in rows]
    if missing:
        raise TopologyError(f"the matrix has no row for {', '.join(missing)} (line {header_at + 1} names it)")

    gpu_rows = {gpu_columns[name]: rows[name] for name in gpu_columns}
    return _build(gpu_rows, [gpu_columns.get(name) for name in devices])


def _parse_header(line: str, line_no: int) -> tuple[list[str], list[str]]:
    tokens = split_header(line.split())
    devices: list[str] = []
    for n, token in enumerate(tokens):
        if token in ("CPU", "NUMA") or (token == "GPU" and tokens[n + 1 : n + 2] == ["NUMA"]):
            rest = " ".join(tokens[n:])
            break
        devices.append(token)
    else:
        rest = ""
    trailing: list[str] = []
    while rest:
        name = next((t for t in _TRAILING if rest.startswith(t)), None)
        if name is None:
            raise TopologyError(f"line {line_no}: unknown header column at {rest!r}")
        trailing.append(name)
        rest = rest[len(name) :].strip()
    expected = [f"GPU{i}" for i in range(sum(1 for d in devices if _GPU.match(d)))]
    if [d for d in devices if _GPU.match(d)] != expected:
        raise TopologyError(f"line {line_no}: GPU columns must be GPU0..GPUn in order, got {devices}")
    if len(set(devices)) != len(devices):
        raise TopologyError(f"line {line_no}: a column name appears twice in {devices}")
    return devices, trailing


def _is_cell(token: str) -> bool:
    return token == "X" or token in _LEVELS or bool(_NV.match(token))


def _gpu_row(tokens: list[str], devices: list[str], trailing_names: list[str], line_no: int, line: str) -> _Row:
    """A GPU's row as written, else as its cells read once split where tabs were lost."""
    try:
        return _parse_gpu_row(tokens, devices, trailing_names, line_no, line)
    except TopologyError:
        split = split_row(tokens, devices, trailing_names)
        if split is None or split == tokens:
            raise
        return _parse_gpu_row(split, devices, trailing_names, line_no, line)


def _parse_gpu_row(tokens: list[str], devices: list[str], trailing_names: list[str], line_no: int, line: str) -> _Row:
    body = tokens[1:]
    n_cells = 0
    while n_cells < len(body) and _is_cell(body[n_cells]):
        n_cells += 1
    if n_cells != len(devices):
        where = f"{tokens[0]} row has {n_cells} link cells but the header names {len(devices)} devices"
        bad = body[n_cells] if n_cells < len(devices) and n_cells < len(body) else None
        extra = f" ({bad!r} is not a link such as NV2, PIX, PXB, PHB, NODE, SYS, X)" if bad else ""
        column = f", column {line.find(bad) + 1}" if bad and bad in line else ""
        raise TopologyError(f"line {line_no}{column}: {where}{extra}")
    values = body[n_cells:]
    if len(values) > len(trailing_names):
        raise TopologyError(
            f"line {line_no}: {tokens[0]} row has {len(values)} values after the matrix, "
            f"the header names {len(trailing_names)} ({', '.join(trailing_names) or 'none'})"
        )
    return _Row(line_no, body[:n_cells], dict(zip(trailing_names, values, strict=False)))


def _cpu_set(value: str | None, line_no: int) -> frozenset[int] | None:
    if value is None or value.upper() == "N/A":
        return None
    if not _CPU_LIST.match(value):
        raise TopologyError(f"line {line_no}: CPU affinity {value!r} is not a CPU list such as 0-11,24-35")
    cpus: set[int] = set()
    for part in value.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(cpus)


def _numa_node(value: str | None, line_no: int) -> int | None:
    """``0``, ``1-1`` (one node written as a range) → that node; ``N/A`` or a span of nodes → unknown."""
    nodes = _cpu_set(value, line_no)
    if nodes is None or len(nodes) != 1:
        return None
    return next(iter(nodes))


def _build(rows: dict[int, _Row], column_gpu: list[int | None]) -> GpuTopology:
    numa = {i: _numa_node(r.trailing.get("NUMA Affinity"), r.line_no) for i, r in rows.items()}
    cpus = {i: _cpu_set(r.trailing.get("CPU Affinity"), r.line_no) for i, r in rows.items()}
    if all(v is None for v in numa.values()):
        numa = _numa_from_cpu_sets(cpus) or numa

    cell: dict[tuple[int, int], tuple[str, int]] = {}
    for i, row in rows.items():
        for col, token in enumerate(row.cells):
            j = column_gpu[col]
            if j is None:
                continue
            if (token == "X") != (i == j):
                raise TopologyError(f"line {row.line_no}: GPU{i}→GPU{j} is {token!r}; X belongs on the diagonal only")
            cell[i, j] = (token, row.line_no)

    links: list[Link] = []
    for (i, j), (token, line_no) in sorted(cell.items()):
        if i >= j:
            continue
        back, _ = cell[j, i]
        if back != token:
            raise TopologyError(
                f"line {line_no}: the matrix is not symmetric: GPU{i}→GPU{j} is {token} but GPU{j}→GPU{i} is {back}"
            )
        if m := _NV.match(token):
            links.append(Link(i, j, int(m.group(1)), _infer_pcie(i, j, numa, cpus)))
        else:
            links.append(Link(i, j, 0, PcieLevel("SYS" if token == "SOC" else token)))
    gpus = [Gpu(index=i, numa_node=numa[i]) for i in sorted(rows)]
    return GpuTopology(gpus, links)


def _numa_from_cpu_sets(cpus: dict[int, frozenset[int] | None]) -> dict[int, int | None] | None:
    """Without a NUMA column, disjoint CPU affinity sets are the sockets; number them by lowest CPU."""
    sets = list(cpus.values())
    if any(s is None for s in sets):
        return None
    distinct = sorted({s for s in sets if s is not None}, key=min)
    if any(a & b for n, a in enumerate(distinct) for b in distinct[n + 1 :]):
        return None
    node_of = {s: n for n, s in enumerate(distinct)}
    return {i: node_of[s] for i, s in cpus.items() if s is not None}


def _infer_pcie(
    i: int, j: int, numa: dict[int, int | None], cpus: dict[int, frozenset[int] | None]
) -> PcieLevel | None:
    if numa[i] is not None and numa[j] is not None:
        return PcieLevel.NODE if numa[i] == numa[j] else PcieLevel.SYS
    a, b = cpus[i], cpus[j]
    if a is not None and b is not None:
        if a == b:
            return PcieLevel.NODE
        if not a & b:
            return PcieLevel.SYS
    return None


def parse_topology_text(text: str) -> GpuTopology:
    """A topology JSON document or ``nvidia-smi topo -m`` text, told apart by the first character."""
    text = normalize_text(text)
    if text.lstrip().startswith("{"):
        return GpuTopology.from_json(text)
    return parse_topo_matrix(text)


def parse_topology_bytes(data: bytes) -> GpuTopology:
    """A saved file's bytes (UTF-8, UTF-16 as PowerShell writes, with or without a byte-order mark)."""
    return parse_topology_text(decode_text(data))
