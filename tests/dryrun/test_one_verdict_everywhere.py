"""One advisor, one answer: the served dry-run, the filter kube-scheduler calls, the console's pending
view, explain and diagnose, asked about the same share against the same snapshot and policy, all say the
reserve holds it off share-a (docs/troubleshooting.md's fleet), from the first call on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from extender.scoring.reserve import hold_reason
from gpu_advisor.app import create_app
from gpu_advisor.cli import main
from gpu_advisor.serve import build_advisor

EXAMPLE = Path(__file__).parents[2] / "examples/held-share"
CLUSTER, POLICY, SHARE = (str(EXAMPLE / name) for name in ("cluster.yaml", "reserve.yaml", "share-400.yaml"))
HELD = hold_reason(400)


def _snapshot() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(Path(CLUSTER).read_text())
    return loaded


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    main([*args, "--cluster", CLUSTER, "--policy", POLICY, "--json"])
    found: dict[str, Any] = json.loads(capsys.readouterr().out)
    return found


def test_every_door_says_the_reserve_holds_the_share_off_share_a(capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = _snapshot()
    pods = {i["metadata"]["name"]: i for i in snapshot["items"] if i["kind"] == "Pod"}
    nodes = [i["metadata"]["name"] for i in snapshot["items"] if i["kind"] == "Node"]
    share = yaml.safe_load(Path(SHARE).read_text())
    advisor, _ = build_advisor(CLUSTER, None, POLICY)  # as `gpu-advisor serve` builds it
    with TestClient(create_app(advisor)) as api:
        served = api.post("/v1/dry-run", json=share).json()
        with_snapshot = api.post("/v1/dry-run", json={"manifest": share, "snapshot": snapshot}).json()
        for i in range(8):  # the waiting 8-GPU pods' calls change nothing: the look already counted them
            api.post("/scheduler/filter", json={"Pod": pods[f"train-{i}"], "NodeNames": nodes})
        filtered = api.post("/scheduler/filter", json={"Pod": pods["infer"], "NodeNames": nodes}).json()
        console = next(p for p in api.get("/v1/console/pending").json()["pods"] if p["pod"] == "ml/infer")
    explained = _cli(["explain", SHARE], capsys)
    diagnosed = _cli(["diagnose", "infer", "-n", "ml"], capsys)

    for answer in (served, with_snapshot, explained):
        assert answer["schedulable"] is False
        assert [f["node"] for f in answer["filtered"] if f["stage"] == "held"] == ["share-a"]
    assert filtered["NodeNames"] == [] and filtered["FailedNodes"]["share-a"] == HELD
    assert advisor.registry.get_sample_value("gpu_advisor_reserve_holds_total") == 1.0
    for diagnosis in (diagnosed, console):
        assert diagnosis["explained_by"] == "hold"
        assert next(s for s in diagnosis["steps"] if s["step"] == "hold")["evidence"] == [f"share-a: {HELD}"]
