"""`gpu-advisor replay --scheduler-config … --outage`: the advisor away for a window of pods, and bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from gpu_advisor.cli import main
from gpu_advisor.cli.scheduler_config import scheduler_config

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,8000,16384,1,T4\nn1,64000,262144,1,T4\n"
PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np0,1000,1024,1,600,\np1,1000,1024,1,600,\n"
SAMPLE = "realk8s-seed42"  # a real kube-scheduler's run of 40 openb nodes and 293 pods, in the trace folder


def _printed(folder: Path, ignorable: bool) -> str:
    """The printed profile, its extender entry ignorable or not."""
    document = yaml.safe_load(scheduler_config())
    document["extenders"][0]["ignorable"] = ignorable
    path = folder / f"printed-{'ignorable' if ignorable else 'waits'}.yaml"
    path.write_text(yaml.safe_dump(document))
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(PODS)
    (tmp_path / "orders").mkdir()
    (tmp_path / "orders" / "pods.order.txt").write_text("1\t0 1\n")
    (tmp_path / "orders" / "pods.nodes.txt").write_text("1\t0 1\n")
    return tmp_path


def _args(d: Path, *more: str) -> list[str]:
    paths = ["--nodes", str(d / "nodes.csv"), "--pods", str(d / "pods.csv"), "--orders", str(d / "orders")]
    return ["replay", *paths, "--seeds", "1", *more]


def test_pods_that_waited_are_reported_in_the_lines_and_the_json(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _printed(files, ignorable=False)
    out_json = files / "out.json"
    assert main(_args(files, "--scheduler-config", config, "--outage", "0:2", "--json", str(out_json))) == 0
    out = capsys.readouterr().out
    assert "kube-scheduler (no outage)" in out and "not ignorable" in out
    assert "outage 0:2: the advisor away while pods 1–2 of 2 arrive" in out
    assert "pods that waited for the advisor, scheduled once it was back: 2.0 per run (2–2)" in out
    assert "nodes over-committed: 0.0 per run (0–0)" in out
    document = json.loads(out_json.read_text())
    assert list(document["policies"]) == ["kube-scheduler", "kube-scheduler (no outage)"]
    section = document["kube_scheduler"]
    assert section["outage"] == "0:2"
    seed = section["seeds"]["1"]
    assert seed["overcommitted_nodes"] == 0
    assert seed["outage"]["pods_waited_for_advisor"] == 2 and seed["outage"]["pods_bound_while_away"] == 0
    assert (seed["outage"]["first_pod_away"], seed["outage"]["last_pod_away"]) == (1, 2)


def test_an_ignorable_profile_shows_the_damage(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Both 0.6-GPU shares arrive while the advisor is away; MostAllocated puts both on n0 (one GPU).
    assert main(_args(files, "--scheduler-config", _printed(files, ignorable=True), "--outage", "0:2")) == 0
    out = capsys.readouterr().out
    assert "pods kube-scheduler bound alone while the advisor was away: 2.0 per run (2–2)" in out
    assert "\nnodes over-committed: 1.0 per run (1–1)" in out
    assert "without the outage: nodes over-committed: 0.0 per run (0–0)" in out


@pytest.mark.parametrize(
    ("more", "message"),
    [
        (["--outage", "0:1"], "--outage: needs --scheduler-config"),
        (["--scheduler-config", "kube-default", "--outage", "0:1"], "no extender"),
        (["--scheduler-config", "printed", "--outage", "abc"], "expected START:LENGTH"),
        (["--scheduler-config", "printed", "--outage", "1:x"], "LENGTH 'x' is not a number of pods"),
        (["--scheduler-config", "printed", "--outage", "2:1"], "starts after pod 2, but the run has 2 pods (seed 1)"),
        (["--scheduler-config", "printed", "--outage", "1:5"], "pods 2–6 are away, but the run has 2 pods (seed 1)"),
    ],
)
def test_a_bad_outage_is_one_line_and_exit_2(
    files: Path, capsys: pytest.CaptureFixture[str], more: list[str], message: str
) -> None:
    assert main(_args(files, *more)) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def _sample(traces: Path) -> Path:
    folder = traces / SAMPLE
    if not (folder / "pods.yaml").is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{folder} is missing")
        pytest.skip(f"{folder} is missing")
    return folder


@pytest.mark.parametrize("ignorable", [False, True])
def test_the_real_checks_sample_through_an_outage_after_40_percent(
    traces: Path, tmp_path: Path, ignorable: bool
) -> None:
    # The real check: the advisor stopped after its 121st filter call; kube-scheduler, ignorable, bound
    # about 140 pods without it and 14-15 of the 40 nodes ended over-committed.
    sample = _sample(traces)
    out_json = tmp_path / "out.json"
    args = ["replay", "--pods", str(sample / "pods.yaml"), "--nodes", str(sample / "nodes.json")]
    args += ["--orders", str(sample / "orders"), "--seeds", "42", "--jobs", "1", "--json", str(out_json)]
    args += ["--scheduler-config", _printed(tmp_path, ignorable), "--outage", "40%:140"]
    assert main(args) == 0
    seed = json.loads(out_json.read_text())["kube_scheduler"]["seeds"]["42"]
    outage = seed["outage"]
    assert outage["without_outage"]["overcommitted_nodes"] == 0
    if ignorable:
        assert outage["pods_bound_while_away"] == 140 and 10 <= seed["overcommitted_nodes"] <= 20
    else:
        assert outage["pods_waited_for_advisor"] == 140 and seed["overcommitted_nodes"] == 0
        assert abs(outage["unallocated_at_100"] - outage["without_outage"]["unallocated_at_100"]) <= 0.5


def test_the_printed_profile_as_shipped_keeps_the_advisors_pods_waiting(traces: Path, tmp_path: Path) -> None:
    """``printed`` is the profile ``gpu-advisor scheduler-config`` prints, unedited: not ignorable, so an
    outage leaves nothing over-committed and strands what the run without it strands."""
    sample = _sample(traces)
    out_json = tmp_path / "out.json"
    args = ["replay", "--pods", str(sample / "pods.yaml"), "--nodes", str(sample / "nodes.json")]
    args += ["--orders", str(sample / "orders"), "--seeds", "42", "--jobs", "1", "--json", str(out_json)]
    assert main([*args, "--scheduler-config", "printed", "--outage", "40%:140"]) == 0
    seed = json.loads(out_json.read_text())["kube_scheduler"]["seeds"]["42"]
    assert seed["outage"]["pods_waited_for_advisor"] == 140 and seed["overcommitted_nodes"] == 0
    assert seed["outage"]["unallocated_at_100"] == seed["outage"]["without_outage"]["unallocated_at_100"]
