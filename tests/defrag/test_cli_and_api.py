"""The edges: ``gpu-advisor defrag`` and ``POST /v1/defrag`` say a plan, or a clear refusal (never a traceback)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gpu_advisor.cli import main
from gpu_advisor.cli.exits import EXIT_BAD_INPUT, EXIT_NO_ANSWER
from tests.defrag.objects import node, pod


def _snapshot(pods: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": [node("a", 2), node("b", 2), *pods]}


def _files(tmp_path: Path, pods: list[dict[str, Any]], pending: dict[str, Any]) -> tuple[str, str]:
    (tmp_path / "cluster.json").write_text(json.dumps(_snapshot(pods)))
    (tmp_path / "pod.json").write_text(json.dumps(pending))
    return str(tmp_path / "cluster.json"), str(tmp_path / "pod.json")


def test_the_cli_prints_a_one_move_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster, pending = _files(tmp_path, [pod("p", 1, "a"), pod("q", 1, "b")], pod("big", 2))
    assert main(["defrag", "--for", pending, "--cluster", cluster]) == 0
    out = capsys.readouterr().out
    assert out.startswith("placeable on a after 1 move: ml/p a → b")
    assert "dry run: nothing was evicted" in out


@pytest.mark.parametrize(
    ("pods", "pending", "args", "code", "message"),
    [
        # two idle nodes tie; the tie order (CRC-32 of the name, as the wire ranks) puts b first
        pytest.param([], pod("small", 1), [], EXIT_BAD_INPUT, "fits already on b; nothing to move", id="fits already"),
        pytest.param([], pod("big", 4), ["--budget", "0"], EXIT_BAD_INPUT, "at least 1 move", id="budget 0"),
        pytest.param([], pod("big", 4), ["--budget", "-1"], EXIT_BAD_INPUT, "at least 1 move", id="budget -1"),
        pytest.param(
            [], {**pod("big", 4), "spec": {**pod("big", 4)["spec"], "nodeName": "zz"}}, [], EXIT_BAD_INPUT,
            "spec.nodeName 'zz' is not a node", id="an unknown node",
        ),
        pytest.param(
            [pod("p", 1, "a", owner=None), pod("q", 1, "b", owner=None)], pod("big", 2), [], EXIT_NO_ANSWER,
            "no plan: no pod may move", id="no movable pods",
        ),
    ],
)  # fmt: skip
def test_the_cli_refuses_clearly(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    pods: list[dict[str, Any]],
    pending: dict[str, Any],
    args: list[str],
    code: int,
    message: str,
) -> None:
    cluster, path = _files(tmp_path, pods, pending)
    assert main(["defrag", "--for", path, "--cluster", cluster, *args]) == code
    captured = capsys.readouterr()
    assert message in captured.err + captured.out
    assert "Traceback" not in captured.err


def test_the_api_answers_a_plan_and_refuses_bad_bodies_with_a_message(api: TestClient) -> None:
    snapshot = _snapshot([pod("p", 1, "a"), pod("q", 1, "b")])
    plan = api.post("/v1/defrag", json={"snapshot": snapshot, "pod": pod("big", 2), "budget": 2})
    assert plan.status_code == 200, plan.text
    assert [m["pod"] for m in plan.json()["moves"]] == ["ml/p"] and plan.json()["placed_on"] == "a"
    for body, said in [
        ({"pod": pod("big", 2)}, "a plan needs {'snapshot': ...}"),
        ({"snapshot": snapshot, "budget": 0}, "at least 1 move"),
        ({"snapshot": snapshot, "pod": pod("small", 1)}, "fits already"),
        ({"snapshot": snapshot, "pod": "nope"}, "'pod' must be a Pod manifest"),
    ]:
        refused = api.post("/v1/defrag", json=body)
        assert refused.status_code == 422 and said in refused.json()["detail"]
    assert api.post("/v1/defrag", content=b"{not json").status_code == 400
