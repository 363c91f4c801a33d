"""A hold everywhere a user looks: the dry-run API lists the held node as the filter refuses it, with
until when; explain and diagnose (its own step) name it from one look at the cluster; past the pod's
limit every view places it as the filter does."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from extender.advice.replay.advisor_policy import replay_node_object
from extender.scoring.hold_clock import until_text
from extender.scoring.reserve import hold_reason
from gpu_advisor.app import create_app
from gpu_advisor.cli import main
from gpu_advisor.cli.exits import EXIT_NO_ANSWER
from tests.api.test_hold_limit import T0, _held_advisor, waiting_pod
from tests.api.test_shared_gpus import alibaba_pod

HELD = hold_reason(400)


def test_the_dry_run_lists_the_node_the_filter_holds_with_until_when() -> None:
    now = [T0]
    advisor = _held_advisor(now)
    pod = waiting_pod("p", T0 - 60)
    with TestClient(create_app(advisor)) as api:
        answer = api.post("/v1/dry-run", json=pod).json()
        body = {"Pod": pod, "NodeNames": ["idle", "half", "full"]}
        refused = api.post("/scheduler/filter", json=body).json()
        assert [r["node"] for r in answer["ranked"]] == refused["NodeNames"] == ["half"]
        assert refused["FailedNodes"]["idle"] == HELD
        held = next(f for f in answer["filtered"] if f["node"] == "idle")
        assert held["stage"] == "held" and held["held_until"] == until_text(T0 + 240)
        assert held["reason"] == f"{HELD} (until {until_text(T0 + 240)} at the latest: the hold limit)"
        now[0] = T0 + 240  # its limit: every view places it as if no reserve existed
        answer = api.post("/v1/dry-run", json=pod).json()
        assert sorted(r["node"] for r in answer["ranked"]) == ["half", "idle"]
        assert sorted(api.post("/scheduler/filter", json=body).json()["NodeNames"]) == ["half", "idle"]


def _placed(pod: dict[str, Any], node: str) -> dict[str, Any]:
    return pod | {"spec": {**pod["spec"], "nodeName": node}, "status": {"phase": "Running"}}


def _whole(i: int) -> dict[str, Any]:
    """A pending whole-GPU pod (8 cores, 32 GiB): the mix the extender has learned counts it."""
    asks = {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"}
    resources = {"requests": asks, "limits": {"nvidia.com/gpu": "1"}}
    spec = {"containers": [{"name": "c", "resources": resources}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"whole-{i}", "namespace": "ml"}, "spec": spec}


def _cluster(tmp_path: Path, waiting: dict[str, Any]) -> str:
    """idle: 2 idle G2 GPUs; half: GPU 0 with 300 milli free, GPU 1 taken; full: 20 GPUs with 100 free
    each; 60 whole-GPU pods pending and ``waiting``. 19,700 of 24,000 milli allocated: past the
    reserve's 80 %, and about 3 whole GPUs still to come for room for 2."""
    items: list[dict[str, Any]] = [
        replay_node_object("idle", "G2", 64_000, 262_144, 2),
        replay_node_object("half", "G2", 64_000, 262_144, 2),
        replay_node_object("full", "G2", 640_000, 2_621_440, 20),
        _placed(alibaba_pod("s", 700, gpu=0), "half"),
        _placed(alibaba_pod("w", 1000, gpu=1), "half"),
        *(_placed(alibaba_pod(f"f{g}", 900, gpu=g), "full") for g in range(20)),
        *(_whole(i) for i in range(60)),
        waiting,
    ]
    for item in items:
        item.setdefault("apiVersion", "v1")
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    (tmp_path / "reserve.yaml").write_text("reserve_whole_gpus: true\n")
    return str(path)


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The command, with the reserve turned on (it is opt-in) unless the test names its own policy."""
    if "--policy" not in args:
        args = [*args, "--policy", str(Path(args[args.index("--cluster") + 1]).parent / "reserve.yaml")]
    code = main(args)
    return code, capsys.readouterr().out


def test_explain_and_diagnose_name_the_hold_and_until_when(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    since = time.time() - 60
    pod = waiting_pod("p", since)
    cluster = _cluster(tmp_path, pod)
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(pod))
    code, out = _cli(["explain", str(tmp_path / "p.yaml"), "--cluster", cluster, "--json"], capsys)
    answer = json.loads(out)
    assert code == EXIT_NO_ANSWER and answer["schedulable"] is False
    until = until_text(since + 300)
    assert answer["verdict"] == f"unschedulable: idle: {HELD} (until {until} at the latest: the hold limit)"
    assert [(f["node"], f["stage"], f["held_until"]) for f in answer["filtered"] if f["stage"] == "held"] == [
        ("idle", "held", until)
    ]
    code, out = _cli(["explain", str(tmp_path / "p.yaml"), "--cluster", cluster], capsys)
    assert f"idle  held   {HELD} (until {until}" in out
    code, out = _cli(["diagnose", "p", "-n", "ml", "--cluster", cluster, "--json"], capsys)
    found = json.loads(out)
    assert found["explained_by"] == "hold"
    step = found["steps"][3]
    assert step["step"] == "hold" and step["explains"] is True
    assert step["finding"].startswith("held for whole-GPU pods on idle: it waits until those pods have come")
    assert f"until {until} at the latest (reserve_hold_limit_s: 300 s" in step["finding"]
    assert "reserve_whole_gpus: false" in step["finding"]
    assert step["evidence"] == [f"idle: {HELD}"]
    code, out = _cli(["diagnose", "p", "-n", "ml", "--cluster", cluster], capsys)
    assert "→ 4. hold: held for whole-GPU pods on idle" in out


def test_past_its_limit_explain_and_diagnose_place_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pod = waiting_pod("p", time.time() - 301)
    cluster = _cluster(tmp_path, pod)
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(pod))
    code, out = _cli(["explain", str(tmp_path / "p.yaml"), "--cluster", cluster, "--json"], capsys)
    assert code == 0 and [r["node"] for r in json.loads(out)["ranked"]] == ["idle"]
    code, out = _cli(["diagnose", "p", "-n", "ml", "--cluster", cluster, "--json"], capsys)
    found = json.loads(out)
    assert found["explained_by"] == "application"
    assert found["steps"][3] == {
        "step": "hold",
        "explains": False,
        "finding": "not held by the reserve (room kept for whole-GPU pods)",
        "evidence": [],
    }


def test_a_short_limit_from_the_policy_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pod = waiting_pod("p", time.time() - 60)
    cluster = _cluster(tmp_path, pod)
    (tmp_path / "policy.yaml").write_text("reserve_whole_gpus: true\nreserve_hold_limit_s: 30\n")
    code, out = _cli(
        ["diagnose", "p", "-n", "ml", "--cluster", cluster, "--policy", str(tmp_path / "policy.yaml")], capsys
    )
    assert code == 0 and "✓ 4. hold: not held by the reserve" in out


def test_a_dry_run_against_a_snapshot_holds_as_explain_does() -> None:
    snapshot = yaml.safe_load((Path(__file__).parents[2] / "examples/held-share/cluster.yaml").read_text())
    share = next(i for i in snapshot["items"] if i["metadata"]["name"] == "infer")
    pod = share | {"status": waiting_pod("p", T0 - 60)["status"]}
    with TestClient(create_app(_held_advisor([T0]))) as api:
        answer = api.post("/v1/dry-run", json={"manifest": pod, "snapshot": snapshot}).json()
    assert answer["schedulable"] is False
    held = [(f["node"], f["held_until"]) for f in answer["filtered"] if f["stage"] == "held"]
    assert held == [("share-a", until_text(T0 + 240))]
