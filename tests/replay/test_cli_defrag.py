"""`gpu-advisor replay --defrag B` end to end on a cut of the real trace: each policy beside itself with moves."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from gpu_advisor.cli import main
from tests.replay.trace_cut import TraceCut, write_cut


@pytest.fixture(scope="module")
def cut(traces: Path, tmp_path_factory: pytest.TempPathFactory) -> TraceCut:
    return write_cut(traces, tmp_path_factory.mktemp("cut"))


def test_defrag_runs_each_policy_again_with_moves_and_reports_them(cut: TraceCut, tmp_path: Path) -> None:
    stdout = io.StringIO()
    args = ["replay", "--nodes", str(cut.nodes), "--pods", str(cut.pods), "--orders", str(cut.orders)]
    args += [
        "--seeds",
        "42",
        "--policies",
        "BestFit",
        "--defrag",
        "5",
        "--jobs",
        "1",
        "--json",
        str(tmp_path / "r.json"),
    ]
    with contextlib.redirect_stdout(stdout):
        assert main(args) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert list(doc["policies"]) == ["BestFit", "BestFit+defrag5"]
    pods = doc["policies"]["BestFit+defrag5"]["pods"]
    # the cut has 300 arrivals on 174 GPUs, so it fills and moves are made: at most ⌊5 × 300 / 100⌋ = 15
    assert 1 <= pods["moves"] <= 15 and pods["gpus_given_back"] >= 0
    with_moves, without = (doc["policies"][p]["unallocated_at_100"]["mean"] for p in ("BestFit+defrag5", "BestFit"))
    assert with_moves <= without
    assert "moves" not in doc["policies"]["BestFit"]["pods"]
    line = next(x for x in stdout.getvalue().splitlines() if x.startswith("BestFit+defrag5: unallocated"))
    assert "unallocated at 100 % arrived" in line and "(BestFit)" in line and "worst bin 50-130 %" in line
