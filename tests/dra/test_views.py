"""DRA pods in the CLI views: explain judges a pod by the GPUs its claim template asks for, on nodes
whose allocated devices are held."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from extender.http.advisor import Advisor
from extender.scoring import ScoringPolicy
from extender.sources.snapshot import parse_snapshot
from gpu_advisor.app import create_app
from gpu_advisor.cli import main
from tests.dra.objects import DRA, example_cluster

NOW = 1_796_000_000.0
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: two-gpus-please, namespace: default}
spec:
  containers:
    - {name: c, image: trainer, resources: {claims: [{name: gpus}]}}
  resourceClaims:
    - {name: gpus, resourceClaimTemplateName: two-gpus}
"""


def test_the_example_cluster_file_is_the_test_objects() -> None:
    assert json.loads((DRA / "dra-cluster.json").read_text(encoding="utf-8")) == example_cluster()


def test_explain_ranks_a_claim_for_two_gpus_by_topology_and_skips_the_held_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pod.yaml").write_text(POD, encoding="utf-8")
    assert main(["explain", str(tmp_path / "pod.yaml"), "--cluster", str(DRA / "dra-cluster.json"), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["request"] == "2 GPUs"
    # dra-node-2's gpu-0 and gpu-1 are the allocated claim's: the pair left there fills the node
    assert [(r["node"], r["gpus"]) for r in answer["ranked"]] == [("dra-node-2", [2, 3]), ("dra-node-1", [0, 1])]


def test_the_dry_run_api_judges_a_claim_against_the_served_snapshot() -> None:
    snap = parse_snapshot(example_cluster(), now=NOW)
    advisor = Advisor(state=snap.cluster("dra"), telemetry=None, policy=ScoringPolicy(), clock=lambda: NOW)
    with TestClient(create_app(advisor), raise_server_exceptions=False) as api:
        answer = api.post("/v1/dry-run", content=POD, headers={"Content-Type": "application/yaml"}).json()
    assert answer["request"] == "2 GPUs"
    assert [(r["node"], r["gpus"]) for r in answer["ranked"]] == [("dra-node-2", [2, 3]), ("dra-node-1", [0, 1])]
