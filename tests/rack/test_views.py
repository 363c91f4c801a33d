"""The clique in the other views: diagnose says why a group waits, explain says where its pods go."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from extender.advice.diagnose import diagnose
from extender.http.advisor import Advisor
from extender.scoring import ScoringPolicy
from extender.sources.snapshot import parse_snapshot, simulated_cluster
from gpu_advisor.app import create_app
from gpu_advisor.cli import main
from tests.rack.cluster import NOW, two_jobsets_and_a_third_waiting, worker

EXAMPLE = Path(__file__).parents[1] / "data" / "rack" / "two-jobsets.json"
WAITS = "needs 8 pods in one clique; largest clique with room holds 2"


def test_the_example_snapshot_is_what_the_scheduler_loop_makes() -> None:
    assert json.loads(EXAMPLE.read_text(encoding="utf-8")) == two_jobsets_and_a_third_waiting()


def test_diagnose_says_the_third_group_waits_for_a_clique_with_room_for_all_eight() -> None:
    snap = parse_snapshot(json.loads(EXAMPLE.read_text(encoding="utf-8")))
    nodes = snap.cluster("example").nodes_by_name()
    found = diagnose(worker("train-c", 0), nodes, None, ScoringPolicy(), NOW)
    assert found.answer is not None
    assert (found.answer.name, found.answer.finding) == ("placement", f"pod group: {WAITS}")
    # hgx-a, hgx-b (no clique) and the two free trays (too few) are each held out with the reason
    assert found.answer.evidence == tuple(
        f"{node}: gpu-advisor: {WAITS}" for node in ("hgx-a", "hgx-b", "rack0-tray-10", "rack0-tray-18")
    )


def test_the_diagnose_command_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", "train-c-w-0", "-n", "ml", "--cluster", str(EXAMPLE)]) == 0
    assert f"explained by: placement — pod group: {WAITS}" in capsys.readouterr().out


def test_the_simulated_rack_holds_eighteen_trays_in_one_clique_beside_the_simulated_cluster() -> None:
    plain = simulated_cluster(now=NOW).cluster("plain").nodes_by_name()
    rack = simulated_cluster(now=NOW, rack=True).cluster("rack").nodes_by_name()
    trays = [n for name, n in rack.items() if name not in plain]
    assert len(trays) == 18 and {n.gpu_total for n in trays} == {4}
    assert {n.labels["nvidia.com/gpu.clique"] for n in trays} == {trays[0].topology.clique}  # type: ignore[union-attr]


def test_the_node_inventory_names_each_trays_clique_and_none_for_a_node_off_any_fabric() -> None:
    state = simulated_cluster(now=NOW, rack=True).cluster("simulated-rack")
    advisor = Advisor(state=state, telemetry=None, policy=ScoringPolicy(), clock=lambda: NOW)
    with TestClient(create_app(advisor)) as api:
        nodes = {n["name"]: n for n in api.get("/v1/nodes").json()}
        one = api.get("/v1/nodes/" + next(iter(nodes))).json()
    plain = simulated_cluster(now=NOW).cluster("plain").nodes_by_name()
    trays = {name: n["nvlink_clique"] for name, n in nodes.items() if name not in plain}
    clique = state.nodes_by_name()[next(iter(trays))].labels["nvidia.com/gpu.clique"]
    assert len(trays) == 18 and set(trays.values()) == {clique}
    assert {n["nvlink_clique"] for name, n in nodes.items() if name in plain} == {None}
    assert "nvlink_clique" in one
