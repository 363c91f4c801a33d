"""NVLink cliques in the console: nodes sharing one are a rack (trays, GPUs of the whole clique, the pod
groups with members there), and a tray's node view names its clique and rack-mates."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from extender.http.advisor import Advisor
from extender.http.console.rack_view import clique_card, rack_cards
from extender.scoring import ScoringPolicy
from extender.sources.nvl72 import NVL72_CLIQUE
from extender.sources.snapshot import parse_snapshot, simulated_cluster
from gpu_advisor.app import create_app

NOW = 1_796_000_000.0
TWO_JOBSETS = Path(__file__).parents[1] / "data" / "rack" / "two-jobsets.json"


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    snap = simulated_cluster(now=NOW, rack=True)
    advisor = Advisor(snap.cluster("simulated-rack"), snap.telemetry(60), ScoringPolicy(), clock=lambda: NOW)
    with TestClient(create_app(advisor), raise_server_exceptions=False) as test_client:
        yield test_client


def test_the_simulated_rack_is_one_rack_of_eighteen_trays_and_72_free_gpus(client: TestClient) -> None:
    doc = client.get("/v1/console/cluster").json()
    [rack] = doc["racks"]
    # 18 trays × 4 GB200 = 72 GPUs, nothing bound on the rack: 72 free, 0 allocated, no pod groups
    assert {k: rack[k] for k in ("clique", "short", "gpus", "free", "allocated", "groups")} == {
        "clique": NVL72_CLIQUE,
        "short": "4fc6b5a0.32766",  # the UUID's first block . the clique id
        "gpus": 72,
        "free": 72,
        "allocated": 0,
        "groups": [],
    }
    assert rack["trays"] == [f"nvl72-tray-{t:02d}" for t in range(1, 19)]
    # the seven simulated nodes beside it are in no clique: they stay plain cards, not in any rack
    racked = {name for r in doc["racks"] for name in r["trays"]}
    assert len([n for n in doc["nodes"] if n["name"] not in racked]) == 7


def test_a_trays_node_view_names_its_clique_and_its_seventeen_rack_mates(client: TestClient) -> None:
    view = client.get("/v1/console/nodes/nvl72-tray-03").json()
    assert (view["clique"]["clique"], view["clique"]["short"]) == (NVL72_CLIQUE, "4fc6b5a0.32766")
    assert view["clique"]["rack_mates"] == [f"nvl72-tray-{t:02d}" for t in range(1, 19) if t != 3]
    assert client.get("/v1/console/nodes/hgx-h100-a").json()["clique"] is None  # off any NVLink fabric


def test_a_rack_counts_the_pod_groups_with_members_in_it() -> None:
    """Two JobSets of 8 four-GPU workers, placed by the advisor onto 16 trays; train-c's first worker pends."""
    nodes = parse_snapshot(json.loads(TWO_JOBSETS.read_text(encoding="utf-8"))).cluster("two").nodes()
    [rack] = rack_cards(nodes)
    # 18 trays × 4 = 72 GPUs; 2 JobSets × 8 workers × 4 GPUs = 64 allocated; 72 - 64 = 8 free (trays 10, 18)
    assert (len(rack["trays"]), rack["gpus"], rack["allocated"], rack["free"]) == (18, 72, 64, 8)
    assert [(g["kind"], g["key"], g["text"]) for g in rack["groups"]] == [
        ("JobSet", "ml/train-a", "8 of 8 workers here"),
        ("JobSet", "ml/train-b", "8 of 8 workers here"),
    ]  # the pending train-c is bound nowhere, so it is in no rack
    hgx = next(n for n in nodes if n.name == "hgx-a")
    assert clique_card(hgx, nodes) is None


def test_a_group_split_across_cliques_shows_its_share_in_each() -> None:
    doc = json.loads(TWO_JOBSETS.read_text(encoding="utf-8"))
    for item in doc["items"]:  # move trays 13-18 into a second clique, and the workers on them
        # (the tie order placed train-a on 13, 16, 17 and train-b on 14, 15 there; tray 18 is free, as is 10)
        if item["kind"] == "Node" and item["metadata"]["name"] >= "rack0-tray-13":
            item["metadata"]["labels"]["nvidia.com/gpu.clique"] = "4fc6b5a0.2"
    nodes = parse_snapshot(doc).cluster("split").nodes()
    first, second = rack_cards(nodes)
    assert (first["short"], len(first["trays"]), first["gpus"], first["free"]) == ("4fc6b5a0.1", 12, 48, 4)
    assert (second["short"], len(second["trays"]), second["gpus"], second["free"]) == ("4fc6b5a0.2", 6, 24, 4)
    # train-a: 8 - 3 = 5 of its workers in the first clique; train-b: 8 - 2 = 6
    assert [g["text"] for g in first["groups"]] == ["5 of 8 workers here", "6 of 8 workers here"]
    assert [g["text"] for g in second["groups"]] == ["3 of 8 workers here", "2 of 8 workers here"]
