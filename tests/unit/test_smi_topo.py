"""`nvidia-smi topo -m` text → topology: every real sample, its variants, and clear errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from extender.model.smi_topo import parse_topo_matrix
from extender.model.topology import PcieLevel, TopologyError
from gpu_advisor.cli import main
from tests.conftest import fixture_files

TOPO_FILES = fixture_files("topo")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def matrix_cells(text: str) -> dict[tuple[int, int], str]:
    """The test's own plain reading of a matrix: row GPUi, i-th whitespace column after the label."""
    lines = [ANSI.sub("", line) for line in text.splitlines()]
    header = next(line.split() for line in lines if line.split()[:1] == ["GPU0"])
    gpus = [h for h in header if re.fullmatch(r"GPU\d+", h)]
    cells = {}
    for line in lines:
        tokens = line.split()
        if tokens and re.fullmatch(r"GPU\d+", tokens[0]) and tokens != header:
            i = int(tokens[0][3:])
            for j in range(len(gpus)):
                cells[i, j] = tokens[1 + j]
    return cells


def show_json(path: Path, capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    assert main(["topology", "show", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_the_shared_topology_samples_are_all_found() -> None:
    assert len(TOPO_FILES) >= 9


@pytest.mark.parametrize("path", TOPO_FILES, ids=lambda p: p.name)
def test_topology_show_json_matches_the_matrix_pair_by_pair(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = show_json(path, capsys)
    cells = matrix_cells(path.read_text())
    n = len(doc["gpus"])
    assert [g["index"] for g in doc["gpus"]] == list(range(n))
    assert len(doc["links"]) == n * (n - 1) // 2, "one entry per unordered pair"
    for link in doc["links"]:
        a, b = link["a"], link["b"]
        cell = cells[a, b]
        assert cells[b, a] == cell
        if cell.startswith("NV"):
            assert link["nvlinks"] == int(cell[2:]), (a, b)
            assert link["pcie"] in ("NODE", "SYS", None), "NV pairs get an inferred level"
        else:
            assert link["nvlinks"] == 0, (a, b)
            assert link["pcie"] == ("SYS" if cell == "SOC" else cell), (a, b)


def test_nvlink_pairs_take_node_within_a_socket_and_sys_across_on_the_dgx1() -> None:
    topo = parse_topo_matrix(
        (Path(__file__).parents[1] / "data/topo/dgx1-like_8xV100-SXM2_hybrid-cube-mesh.txt").read_text()
    )
    # No NUMA column: the disjoint CPU sets 0-11,24-35 and 12-23,36-47 are the two sockets.
    assert topo.numa_groups() == {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}
    assert topo.link(0, 3).nvlinks == 2 and topo.link(0, 3).pcie is PcieLevel.NODE
    assert topo.link(0, 4).nvlinks == 2 and topo.link(0, 4).pcie is PcieLevel.SYS
    assert topo.link(0, 5).nvlinks == 0 and topo.link(0, 5).pcie is PcieLevel.SYS


def test_nic_columns_named_directly_and_in_a_legend_are_not_gpus() -> None:
    b200 = parse_topo_matrix((Path(__file__).parents[1] / "data/topo/gke-a4_8xB200_NV18_8NIC.txt").read_text())
    assert b200.indices == tuple(range(8))
    assert b200.nvlink_islands() == [list(range(8))]
    assert b200.numa_groups() == {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}


SMALL = """\
\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity
GPU0\t X \tNV2\tSYS\tSYS\t0,2,4\t0-0
GPU1\tNV2\t X \tSYS\tSYS\t0,2,4\t0-0
GPU2\tSYS\tSYS\t X \tNV2\t1,3,5\t1-1
GPU3\tSYS\tSYS\tNV2\t X \t1,3,5\t1-1
"""


def test_tabs_single_node_ranges_and_cpu_lists_are_read() -> None:
    topo = parse_topo_matrix(SMALL)
    assert topo.numa_groups() == {0: [0, 1], 1: [2, 3]}
    assert topo.link(0, 1).nvlinks == 2 and topo.link(0, 1).pcie is PcieLevel.NODE
    assert topo.link(1, 2).pcie is PcieLevel.SYS


def test_legacy_soc_is_read_as_sys_and_spaces_equal_tabs() -> None:
    spaced = SMALL.replace("\t", "    ").replace("SYS", "SOC")
    assert parse_topo_matrix(spaced).link(0, 2).pcie is PcieLevel.SYS
    assert parse_topo_matrix(spaced).links == parse_topo_matrix(SMALL).links


def test_ansi_escapes_a_prompt_line_and_a_legend_are_ignored() -> None:
    decorated = "$ nvidia-smi topo -m\n\x1b[4m" + SMALL.replace("\n", "\x1b[0m\n", 1) + "\nLegend:\n\n  X    = Self\n"
    assert parse_topo_matrix(decorated).links == parse_topo_matrix(SMALL).links


def test_unknown_numa_and_different_cpu_sets_still_infer_nvlink_pcie_levels() -> None:
    text = "GPU0 GPU1 CPU Affinity NUMA Affinity\nGPU0 X NV4 0-7 N/A\nGPU1 NV4 X 8-15 N/A\n".replace(
        "GPU0 GPU1", "\tGPU0\tGPU1", 1
    )
    assert parse_topo_matrix(text).link(0, 1).pcie is PcieLevel.SYS


def test_without_any_affinity_an_nvlink_pair_has_unknown_pcie() -> None:
    topo = parse_topo_matrix("\tGPU0\tGPU1\nGPU0\tX\tNV1\nGPU1\tNV1\tX\n")
    assert topo.link(0, 1).pcie is None and topo.gpu(0).numa_node is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no header line"),
        ("hello\nworld\n", "no header line"),
        ("\tGPU0\tGPU1\nGPU0\tX\tNV1\n", "no row for GPU1"),
        (
            "\tGPU0\tGPU1\tGPU2\nGPU0\tX\tNV1\nGPU1\tNV1\tX\tSYS\nGPU2\tSYS\tSYS\tX\n",
            "line 2: GPU0 row has 2 link cells",
        ),
        ("\tGPU0\tGPU1\nGPU0\tX\tNV1\nGPU1\tNV2\tX\n", "not symmetric: GPU0→GPU1 is NV1 but GPU1→GPU0 is NV2"),
        ("\tGPU0\tGPU1\nGPU0\tX\tPIX\nGPU1\tX\tX\n", "line 3: GPU1→GPU0 is 'X'"),
        ("\tGPU0\tGPU1\tCPU Affinity\nGPU0\tX\tPIX\tfoo\nGPU1\tPIX\tX\t0\n", "line 2: CPU affinity 'foo'"),
        ("\tGPU0\tGPU1\tCPU Affinity\tColour\nGPU0\tX\tPIX\nGPU1\tPIX\tX\n", "line 1: unknown header column"),
    ],
)
def test_malformed_text_is_a_clear_error_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(TopologyError, match=re.escape(message)):
        parse_topo_matrix(text)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (b"\x00\x01\x02\xff\xfe garbage \x00", "is not text"),
        (b"\tGPU0\tGPU1\tGPU2\nGPU0\tX\tNV1\nGPU1\tNV1\tX\tSYS\nGPU2\tSYS\tSYS\tX\n", "row has 2 link cells"),
        (b"\tGPU0\tGPU1\nGPU0\tX\tSYS\nGPU1\tPIX\tX\n", "not symmetric"),
        (b'{"gpus": "many"}', "non-empty list 'gpus'"),
        (b"{not json", "not valid JSON"),
    ],
    ids=["empty", "binary", "ragged", "asymmetric", "json-wrong-type", "json-broken"],
)
def test_bad_files_exit_2_with_one_line_and_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    path = tmp_path / "topo.txt"
    path.write_bytes(content)
    assert main(["topology", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_a_missing_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topology", "show", "/nonexistent/topo.txt"]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_bundled_example_prints_matrix_islands_and_numa_groups(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topology", "show", "--example", "dgx1-v100"]) == 0
    out = capsys.readouterr().out
    assert "GPU0  X     NV1   NV1   NV2   NV2   SYS" in out
    assert "NVLink islands: {0,1,2,3,4,5,6,7}" in out
    assert "NUMA groups:    0: {0,1,2,3}  1: {4,5,6,7}" in out
