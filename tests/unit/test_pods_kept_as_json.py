"""The snapshot's Pod objects the console reads, kept as compressed JSON rather than as thousands of dicts."""

from __future__ import annotations

import json
from pathlib import Path

from gpu_advisor.memory import kept_as_json
from gpu_advisor.serve import build_advisor


def test_the_objects_read_back_are_equal_to_those_kept_and_fresh_on_each_call() -> None:
    pods = [{"metadata": {"name": "train", "namespace": "ml"}, "spec": {"nodeName": "dgx-a"}}]
    read = kept_as_json(pods)
    first = read()
    assert first == pods and first is not pods
    first[0]["metadata"]["name"] = "changed"  # a caller's change stays its own
    assert read() == pods


def test_objects_orjson_cannot_write_are_kept_as_they_are() -> None:
    pods = [{"metadata": {"name": "big", "uid": 2**70}}]  # json reads integers past 64 bits; orjson writes none
    assert kept_as_json(pods)() is pods


def test_a_served_snapshot_hands_the_console_its_pods(tmp_path: Path) -> None:
    snapshot = tmp_path / "cluster.json"
    snapshot.write_text(
        json.dumps(
            {
                "nodes": [{"name": "dgx-a", "machine": "dgx1-v100"}],
                "pods": [{"name": "train", "namespace": "ml", "node": "dgx-a", "gpus": 2}],
            }
        )
    )
    advisor, _ = build_advisor(str(snapshot), None, None)
    assert advisor.pod_objects is not None
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in advisor.pod_objects()] == [("ml", "train")]
