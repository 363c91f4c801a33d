"""``topology show`` reads every ``nvidia-smi topo -m`` text a person can read, however it was saved
or pasted, and otherwise says exactly what is wrong (line, column, what was expected)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from extender.model.smi_topo import parse_topo_matrix, parse_topology_bytes
from extender.model.topology import TopologyError
from gpu_advisor.cli import main
from tests.conftest import fixture_files

TOPO_FILES = fixture_files("topo")


def powershell(text: str) -> bytes:
    """What ``nvidia-smi topo -m > topo.txt`` writes in Windows PowerShell 5: UTF-16LE, BOM, CRLF."""
    return b"\xff\xfe" + text.replace("\n", "\r\n").encode("utf-16-le")


def tabs_lost(text: str) -> bytes:
    """A web page that drops nvidia-smi's tabs: column gaps (tabs, or runs of 2+ spaces) vanish, so
    names run together (GPU0GPU1GPU2…, NV4NODE0-31,64-950); single spaces inside names stay."""
    return re.sub(r"\t+| {2,}", "", text).encode()


TRANSFORMS: dict[str, Callable[[str], bytes]] = {
    "utf-16 with BOM, CRLF (PowerShell >)": powershell,
    "utf-16-be with BOM": lambda t: b"\xfe\xff" + t.encode("utf-16-be"),
    "utf-16-le without BOM": lambda t: t.encode("utf-16-le"),
    "utf-8 with BOM": lambda t: b"\xef\xbb\xbf" + t.encode(),
    "tabs lost": tabs_lost,
    "non-breaking spaces": lambda t: t.replace(" ", "\u00a0").replace("\t", "\u00a0\u00a0").encode(),
    "zero-width spaces after every tab": lambda t: t.replace("\t", "\t\u200b").encode(),
}


@pytest.mark.parametrize("transform", TRANSFORMS, ids=list(TRANSFORMS))
@pytest.mark.parametrize("path", TOPO_FILES, ids=lambda p: p.name)
def test_every_real_matrix_reads_the_same_however_it_was_saved(path: Path, transform: str) -> None:
    text = path.read_text()
    assert parse_topology_bytes(TRANSFORMS[transform](text)) == parse_topo_matrix(text)


def test_tabs_lost_really_runs_the_header_names_together() -> None:
    """The transform is the case of the review: no whitespace left between the device names."""
    text = next(p for p in TOPO_FILES if p.name.startswith("3xRTX")).read_text()
    pasted = tabs_lost(text).decode()
    assert "GPU0GPU1GPU2CPU AffinityNUMA Affinity" in pasted and "GPU0 X NV4NODE0-31,64-950" in pasted


def test_topology_show_reads_a_powershell_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = next(p for p in TOPO_FILES if p.name.startswith("dgx1"))
    saved = tmp_path / "topo.txt"
    saved.write_bytes(powershell(path.read_text()))
    assert main(["topology", "show", str(saved)]) == 0
    capsys.readouterr()
    assert main(["topology", "show", str(saved), "--json"]) == 0
    assert '"nvlinks": 2' in capsys.readouterr().out


@pytest.mark.parametrize(
    ("data", "message"),
    [
        # A cell that is no link: where it is and what was expected.
        (
            b"\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU1\tNV2\t BAD\n",
            "line 3, column 11: GPU1 row has 1 link cells but the header names 2 devices"
            " ('BAD' is not a link such as NV2, PIX, PXB, PHB, NODE, SYS, X)",
        ),
        # Invalid UTF-16 after a UTF-16 byte-order mark: line and column of the bad bytes.
        (b"\xff\xfe" + "\tGPU0\n".encode("utf-16-le") + b"\x00\xd8", "line 2, column 1: bytes that are not UTF-16-LE"),
        # NUL bytes that are not UTF-16's pattern: truly not text, and where.
        (b"\tGPU0\nGPU0\t X\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09", "line 2, column 8: a NUL byte"),
    ],
)
def test_what_cannot_be_read_is_said_exactly(data: bytes, message: str) -> None:
    with pytest.raises(TopologyError) as caught:
        parse_topology_bytes(data)
    assert message in str(caught.value)


def test_a_text_in_a_legacy_encoding_is_read_too() -> None:
    """A Windows-1252 prompt line above the matrix ("café$") is not UTF-8; the matrix is still ASCII."""
    data = "caf\xe9$ nvidia-smi topo -m\n\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU1\tNV2\t X \n".encode("cp1252")
    assert parse_topology_bytes(data).link(0, 1).nvlinks == 2


def test_the_cli_never_calls_readable_text_binary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "topo.txt"
    saved.write_bytes(b"\xff\xfe" + "hello, not a matrix\n".encode("utf-16-le"))
    assert main(["topology", "show", str(saved)]) != 0
    err = capsys.readouterr().err
    assert "binary" not in err and "no header line whose first column is GPU0" in err
