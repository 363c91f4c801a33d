"""``rocm-smi --showtopo`` and ``amd-smi topology`` text → topology: each real sample, and clear errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from extender.model.amd_smi_topo import parse_amd_topology
from extender.model.smi_topo import parse_topo_matrix
from extender.model.topology import GpuTopology, PcieLevel, TopologyError
from gpu_advisor.cli import main

AMD = Path(__file__).parents[1] / "data" / "amd"
SAMPLES = sorted(AMD.glob("*.txt"))


def link_types(text: str) -> list[list[str]]:
    """The test's own plain reading: the rows under the link-type title, cells after the row label."""
    lines = text.splitlines()
    titles = ("Link Type between two GPUs", "LINK TYPE TABLE:")
    start = next(n for n, line in enumerate(lines) if any(t in line for t in titles))
    header = lines[start + 1].split()
    return [lines[start + 2 + r].split()[1:] for r in range(len(header))]


def test_every_sample_is_named_with_its_source_in_the_readme() -> None:
    entries = (AMD / "README.md").read_text().split("\n- ")
    assert len(SAMPLES) >= 3
    for sample in SAMPLES:
        entry = next(e for e in entries if e.startswith(f"`{sample.name}`"))
        assert re.search(r"Source: https://\S+", entry), f"{sample.name} has no source URL"


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_each_pair_is_one_xgmi_link_or_none_exactly_as_the_table_says(path: Path) -> None:
    text = path.read_text()
    topo = parse_amd_topology(text)
    cells = link_types(text)
    assert topo.vendor.name == "amd" and topo.vendor.link == "XGMI"
    assert len(topo.links) == len(cells) * (len(cells) - 1) // 2
    for link in topo.links:
        assert cells[link.a][link.b] == cells[link.b][link.a]
        assert link.nvlinks == (1 if cells[link.a][link.b] == "XGMI" else 0), link


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_the_cli_shows_each_sample_as_an_amd_topology_document(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topology", "show", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["vendor"] == "amd"
    assert GpuTopology.from_dict(doc) == parse_amd_topology(path.read_text())


def test_the_mi308x_board_is_one_xgmi_island_on_two_numa_nodes() -> None:
    topo = parse_amd_topology((AMD / "rocm-smi-8x-mi308x-xgmi.txt").read_text())
    assert topo.nvlink_islands() == [list(range(8))]
    assert topo.numa_groups() == {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}
    # XGMI pairs get their PCIe level from the NUMA nodes: 0-1 same node → NODE, 0-4 across → SYS.
    assert (topo.link(0, 1).pcie, topo.link(0, 4).pcie) == (PcieLevel.NODE, PcieLevel.SYS)


def test_the_pcie_box_with_one_gpu_per_numa_node_is_sys_apart_everywhere() -> None:
    topo = parse_amd_topology((AMD / "rocm-smi-4x-pcie.txt").read_text())
    assert [g.numa_node for g in topo.gpus] == [0, 1, 3, 2]
    assert {(lk.nvlinks, lk.pcie) for lk in topo.links} == {(0, PcieLevel.SYS)}
    assert topo.nvlink_islands() == [[0], [1], [2], [3]]


def test_amd_smi_names_gpus_by_bus_id_and_leaves_the_pcie_level_of_xgmi_pairs_unknown() -> None:
    topo = parse_amd_topology((AMD / "amd-smi-8x-mi355x-xgmi.txt").read_text())
    assert [g.pci_bus_id for g in topo.gpus][:2] == ["0000:0d:00.0", "0000:26:00.0"]
    assert all(g.numa_node is None for g in topo.gpus), "amd-smi topology prints no NUMA nodes"
    assert {(lk.nvlinks, lk.pcie) for lk in topo.links} == {(1, None)}


@pytest.mark.parametrize(
    ("pcie_hops", "level"),
    [("2", PcieLevel.NODE), ("3", PcieLevel.SYS)],
    ids=["2 hops: one socket", "3 hops: across sockets"],
)
def test_without_numa_nodes_pcie_hops_give_the_level(pcie_hops: str, level: PcieLevel) -> None:
    text = f"""HOPS TABLE:
             0000:03:00.0 0000:0c:00.0
0000:03:00.0 0            {pcie_hops}
0000:0c:00.0 {pcie_hops}            0
LINK TYPE TABLE:
             0000:03:00.0 0000:0c:00.0
0000:03:00.0 SELF         PCIE
0000:0c:00.0 PCIE         SELF
"""
    assert parse_amd_topology(text).link(0, 1) == parse_amd_topology(text).links[0]
    assert (parse_amd_topology(text).link(0, 1).nvlinks, parse_amd_topology(text).link(0, 1).pcie) == (0, level)


def test_nvidia_text_still_reads_as_nvidia() -> None:
    topo = parse_topo_matrix("      GPU0  GPU1\nGPU0   X    NV4\nGPU1  NV4    X\n")
    assert topo.vendor.name == "nvidia" and "vendor" not in topo.to_dict(), "NVIDIA documents stay as they were"


TYPES = "=== Link Type between two GPUs ===\n"
TWO_XGMI = TYPES + "       GPU0         GPU1\nGPU0   0            XGMI\nGPU1   XGMI         0\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (TYPES + "       GPU0  GPU1\nGPU0   0     XGMI\nGPU1   PCIE  0\n", "not symmetric"),
        (TYPES + "       GPU0  GPU1\nGPU0   0     XGMI\n", "no row for GPU1"),
        (TYPES + "       GPU0  GPU1\nGPU0   0     NVL\nGPU1   NVL   0\n", "not XGMI or PCIE"),
        (TYPES + "       GPU0  GPU1\nGPU0   0     XGMI  XGMI\n", "3 cells but the header names 2"),
        (TYPES + "       GPU0  GPU2\nGPU0   0     XGMI\nGPU2   XGMI  0\n", "GPU0..GPUn"),
        (TWO_XGMI + "GPU[5]  : (Topology) Numa Node: 1\n", "NUMA node of GPU[5]"),
        ("=== Weight between two GPUs ===\n   GPU0\nGPU0  0\n", "no 'Link Type between two GPUs'"),
    ],
    ids=["asymmetric", "missing-row", "unknown-type", "short-header", "gap-in-gpus", "numa-of-no-gpu", "no-link-table"],
)
def test_broken_text_gets_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(TopologyError, match=re.escape(message)):
        parse_amd_topology(text)


def test_an_amd_topology_document_round_trips_with_its_vendor() -> None:
    topo = parse_amd_topology(TWO_XGMI)
    again = GpuTopology.from_json(topo.to_json())
    assert again == topo and again.vendor.name == "amd"
    assert again.fingerprint == parse_topo_matrix("      GPU0  GPU1\nGPU0   X    NV1\nGPU1  NV1    X\n").fingerprint, (
        "the same wiring places the same, whoever made it"
    )


def test_an_unknown_vendor_in_a_document_is_refused() -> None:
    with pytest.raises(TopologyError, match="'intel' is not one of nvidia, amd"):
        GpuTopology.from_json('{"version": 1, "gpus": [{"index": 0}], "vendor": "intel"}')
