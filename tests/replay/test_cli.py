"""`gpu-advisor replay` end to end on a cut of the real trace: the table, the `--json` contract, the plot."""

from __future__ import annotations

import contextlib
import io
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from extender.advice.replay import openb
from extender.advice.replay.report_json import sweep_json
from extender.advice.replay.run import Workset, run_sweep
from gpu_advisor.cli import main
from tests.replay.trace_cut import TraceCut, write_cut

BASELINES = ["Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def cut(traces: Path, tmp_path_factory: pytest.TempPathFactory) -> TraceCut:
    """First 300 pods of default on its first 40 nodes (174 GPUs), shipped orders of seeds 42 and 43."""
    return write_cut(traces, tmp_path_factory.mktemp("cut"))


def _args(cut: TraceCut, *more: str) -> list[str]:
    return ["replay", "--nodes", str(cut.nodes), "--pods", str(cut.pods), "--orders", str(cut.orders), *more]


@pytest.fixture(scope="module")
def replayed(cut: TraceCut, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any], Path]:
    """All six baselines, seeds 42 and 43, two processes: (stdout, --json document, --plot file)."""
    out = tmp_path_factory.mktemp("out")
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        outputs = ["--json", str(out / "r.json"), "--plot", str(out / "r.png")]
        code = main(_args(cut, "--seeds", "42,43", "--policies", ",".join(BASELINES), "--jobs", "2", *outputs))
    assert code == 0
    return stdout.getvalue(), json.loads((out / "r.json").read_text()), out / "r.png"


def test_the_json_document_has_the_contracts_keys_names_seeds_and_131_bins(
    replayed: tuple[str, dict[str, Any], Path],
) -> None:
    _, doc, _ = replayed
    assert set(doc) == {"trace", "policies"}
    assert doc["trace"] == "cut"
    assert list(doc["policies"]) == BASELINES
    for policy in doc["policies"].values():
        assert set(policy) == {"seeds", "unallocated_at_100", "pods"}
        assert list(policy["seeds"]) == ["42", "43"]
        assert set(policy["unallocated_at_100"]) == {"mean", "sd"}
        # the baselines hold nothing: no pod waited
        assert policy["pods"]["held"] == 0 and policy["pods"]["wait_s"] == {"mean": 0.0, "p95": 0.0, "max": 0.0}
        for seed in policy["seeds"].values():
            assert set(seed) == {"alloc_pct"}
            assert list(seed["alloc_pct"]) == [str(x) for x in range(131)]


def test_unallocated_at_100_is_the_mean_and_sd_of_100_minus_each_seeds_alloc_at_100(
    replayed: tuple[str, dict[str, Any], Path],
) -> None:
    _, doc, _ = replayed
    for policy in doc["policies"].values():
        at_100 = [round(100 - seed["alloc_pct"]["100"], 2) for seed in policy["seeds"].values()]
        assert policy["unallocated_at_100"] == {"mean": statistics.fmean(at_100), "sd": statistics.stdev(at_100)}


def test_bins_no_event_fell_near_are_null_and_the_rest_are_numbers(
    replayed: tuple[str, dict[str, Any], Path],
) -> None:
    _, doc, _ = replayed
    seeds = doc["policies"]["FGD"]["seeds"]
    # in seed 43 an 8-GPU pod (4.6 % of the cut's 174 GPUs) takes arrivals from 127.5 % to 132.1 %:
    # no event has X in 128..131, so 129 and 130 have nothing within ±1
    assert (seeds["43"]["alloc_pct"]["129"], seeds["43"]["alloc_pct"]["130"]) == (None, None)
    values = [v for seed in seeds.values() for v in seed["alloc_pct"].values()]
    assert all(v is None or isinstance(v, float) for v in values)
    assert seeds["42"]["alloc_pct"]["0"] == 0.0 and isinstance(seeds["42"]["alloc_pct"]["130"], float)


def test_the_table_has_a_row_per_5_percent_from_50_to_130_and_a_column_per_policy(
    replayed: tuple[str, dict[str, Any], Path],
) -> None:
    stdout, doc, _ = replayed
    lines = stdout.splitlines()
    header = lines[lines.index("Unallocated GPU %") + 1]
    assert header.split() == ["arrived", "%", *BASELINES]
    rows = lines[lines.index("Unallocated GPU %") + 2 :][:17]
    assert [int(row.split()[0]) for row in rows] == list(range(50, 131, 5))
    fgd_100 = doc["policies"]["FGD"]["unallocated_at_100"]
    assert f"{fgd_100['mean']:.2f} ± {fgd_100['sd']:.2f}" in rows[10]  # the row of 100 %
    assert "Frag/total %" in stdout


def test_the_plot_is_a_png(replayed: tuple[str, dict[str, Any], Path]) -> None:
    _, _, png = replayed
    assert png.read_bytes()[:8] == PNG_SIGNATURE


def test_the_command_gives_what_the_replay_gives_in_process_on_one_process(
    cut: TraceCut, traces: Path, replayed: tuple[str, dict[str, Any], Path]
) -> None:
    _, doc, _ = replayed
    nodes, pods = openb.load_nodes(cut.nodes), openb.load_pods(cut.pods)
    orders = openb.load_orders(cut.orders / "cut.order.txt", cut.orders / "cut.nodes.txt", pods, len(nodes))
    in_process = sweep_json(run_sweep(Workset("cut", nodes, pods, orders), ["FGD", "Random"], [42, 43], jobs=1))
    assert in_process["policies"]["FGD"] == doc["policies"]["FGD"]
    assert in_process["policies"]["Random"] == doc["policies"]["Random"]


def test_without_orders_each_seed_draws_the_same_order_every_time(
    cut: TraceCut, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["replay", "--nodes", str(cut.nodes), "--pods", str(cut.pods), "--seeds", "7", "--policies", "BestFit"]
    assert main([*base, "--json", str(tmp_path / "a.json")]) == 0
    assert main([*base, "--json", str(tmp_path / "b.json")]) == 0
    first = json.loads((tmp_path / "a.json").read_text())
    assert first == json.loads((tmp_path / "b.json").read_text())
    assert list(first["policies"]["BestFit"]["seeds"]) == ["7"]


def test_compare_published_prints_the_papers_figure_beside_the_replayed_one(
    traces: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "replay",
            "--nodes", str(traces / "openb" / openb.NODE_LIST),
            "--pods", str(openb.pod_csv(traces, "default")),
            "--orders", str(traces / "fgd-order"),
            "--seeds", "42", "--policies", "GpuClustering", "--compare-published",
        ]
    )  # fmt: skip
    assert code == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("GpuClustering "))
    # published default seed 42: GpuClustering allocates 91.33 % at X = 100, so 8.67 % stay unallocated
    assert row.split() == ["GpuClustering", "8.67", "±", "0.00", "8.67", "±", "0.00", "+0.00", "1"]


def test_limit_prints_and_writes_each_policys_distance_to_the_bound(
    cut: TraceCut, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "limit.json").write_text(json.dumps({"trace": "cut", "seeds": {"42": 1.5, "44": 2.0}}))
    limit = ["--limit", str(tmp_path / "limit.json"), "--json", str(tmp_path / "r.json")]
    assert main([*_args(cut, "--seeds", "42,43", "--policies", "BestFit", "--jobs", "1"), *limit]) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    unallocated_42 = round(100 - doc["policies"]["BestFit"]["seeds"]["42"]["alloc_pct"]["100"], 2)
    # only seed 42 has a bound: distance = its unallocated % - 1.5, and that is the mean
    distance = round(unallocated_42 - 1.5, 2)
    assert doc["policies"]["BestFit"]["distance_to_limit"] == {"seeds": {"42": distance}, "mean": distance}
    assert doc["limit"] == {"trace": "cut", "seeds": {"42": 1.5, "44": 2.0}}
    out = capsys.readouterr().out.splitlines()
    report = out[out.index("Distance to the limit at 100 % arrived (seeds 42; limit 1.50 %)") :]
    assert report[1] == f"BestFit  {unallocated_42:.2f} % unallocated, {distance:+.2f} points from the limit"
    assert report[2] == "no bound for seed(s) 43: left out of the distance"
