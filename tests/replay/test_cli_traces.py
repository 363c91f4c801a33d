"""`gpu-advisor replay` over several traces in one command: `--pods` given again, or a folder of pod lists."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from gpu_advisor.cli import main
from gpu_advisor.replay_inputs import pod_files
from tests.replay.trace_cut import TwoCuts, write_two_cuts

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def cuts(traces: Path, tmp_path_factory: pytest.TempPathFactory) -> TwoCuts:
    return write_two_cuts(traces, tmp_path_factory.mktemp("cuts"))


def _replay(cuts: TwoCuts, pods: list[Path], out: Path, *more: str) -> tuple[int, str, dict[str, Any]]:
    args = ["replay", "--nodes", str(cuts.nodes), "--orders", str(cuts.orders), "--seeds", "42,43"]
    args += [part for path in pods for part in ("--pods", str(path))]
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main([*args, "--policies", "FGD,BestFit", "--json", str(out), *more])
    return code, stdout.getvalue(), json.loads(out.read_text()) if code == 0 else {}


def test_a_folder_sweeps_every_pod_list_in_it_each_as_it_replays_alone(cuts: TwoCuts, tmp_path: Path) -> None:
    code, stdout, both = _replay(cuts, [cuts.folder], tmp_path / "both.json", "--jobs", "2")
    assert code == 0
    assert [doc["trace"] for doc in both["traces"]] == ["large", "small"]
    for doc in both["traces"]:
        alone = _replay(cuts, [cuts.folder / f"openb_pod_list_{doc['trace']}.csv"], tmp_path / "one.json")[2]
        assert doc == alone
    # each trace's tables, one after the other
    assert stdout.index("large: 2 policies x 2 seed(s)") < stdout.index("small: 2 policies x 2 seed(s)")


def test_pods_given_again_keeps_the_order_given_and_writes_a_plot_per_trace(cuts: TwoCuts, tmp_path: Path) -> None:
    small, large = cuts.folder / "openb_pod_list_small.csv", cuts.folder / "openb_pod_list_large.csv"
    code, _, both = _replay(cuts, [small, large], tmp_path / "r.json", "--plot", str(tmp_path / "curves.png"))
    assert code == 0
    assert [doc["trace"] for doc in both["traces"]] == ["small", "large"]
    for trace in ("small", "large"):
        assert (tmp_path / f"curves-{trace}.png").read_bytes()[:8] == PNG_SIGNATURE
    assert not (tmp_path / "curves.png").exists()


def test_a_folder_with_compare_published_takes_only_the_published_traces(traces: Path) -> None:
    files, left_out = pod_files([traces / "openb"], {"default", "multigpu50"})
    assert [f.name for f in files] == ["openb_pod_list_default.csv", "openb_pod_list_multigpu50.csv"]
    assert "cpu0" in left_out and "default" not in left_out
    everything, none_left = pod_files([traces / "openb"])
    assert len(everything) == 24 and none_left == []


def _refused(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpu-advisor: error: ") and len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_several_traces_are_refused_where_they_cannot_be_honoured(
    cuts: TwoCuts, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["replay", "--nodes", str(cuts.nodes), "--orders", str(cuts.orders), "--seeds", "42", "--policies", "FGD"]
    limit = tmp_path / "limit.json"
    limit.write_text('{"seeds": {"42": 1.0}}')
    assert "bounds one trace" in _refused([*base, "--pods", str(cuts.folder), "--limit", str(limit)], capsys)
    (tmp_path / "empty").mkdir()
    assert "holds no openb_pod_list_*.csv" in _refused([*base, "--pods", str(tmp_path / "empty")], capsys)
    twice = [*base, "--pods", str(cuts.folder), "--pods", str(cuts.folder / "openb_pod_list_small.csv")]
    assert "are both trace 'small'" in _refused(twice, capsys)


def test_ray_options_that_cannot_be_honoured_are_refused_before_any_work(
    cuts: TwoCuts, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = ["replay", "--nodes", str(cuts.nodes), "--pods", str(cuts.folder), "--orders", str(cuts.orders)]
    on_cluster = [*base, "--seeds", "42", "--ray", "ray://127.0.0.1:10001", "--jobs", "2"]
    assert "--jobs sizes a local Ray only" in _refused(on_cluster, capsys)
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    err = _refused([*base, "--seeds", "42", "--policies", "FGD", "--ray"], capsys)
    assert "pip install 'gpu-advisor[ray]'" in err
