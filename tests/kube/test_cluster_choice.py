"""--cluster simulated|kube|FILE, decided in one place for serve and for the one-look commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from extender.sources import documents
from extender.sources.cluster_choice import live_model, one_look, source_name
from extender.sources.snapshot import SnapshotError, load_snapshot, simulated_cluster

NOW = 1_796_000_000.0


def test_the_simulated_cluster_is_a_data_file_read_through_the_snapshot_parser() -> None:
    text = (Path(documents.__file__).parent / "simulated_cluster.json").read_text(encoding="utf-8")
    doc = json.loads(text)
    names = [n["name"] for n in doc["nodes"]]
    assert names == ["dgx1-v100-a", "dgx1-v100-b", "hgx-h100-a", "l40s-a", "a100-mig-a", "t4-ts-a", "mi300x-a"]
    snap = simulated_cluster(now=NOW)
    assert [n["metadata"]["name"] for n in snap.nodes] == names
    assert len(snap.pods) == len(doc["pods"]) == 10
    # 7 nodes × 8 GPUs of readings, less the MIG node (none) and the T4 node (none): 5 × 8
    assert len(snap.readings) == 40


def test_a_snapshot_file_serves_under_its_name_with_its_telemetry(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"nodes": [{"name": "a", "machine": "dgx1-v100", "free": [0, 1]}], "time": NOW}))
    model = live_model(str(path), None, 60, on_synced=lambda: None)
    assert model.state.source == f"snapshot {path}" and model.watch is None and model.telemetry is not None
    assert [n.name for n in model.state.nodes()] == ["a"]


def test_serving_from_a_file_that_is_not_there_names_the_choices() -> None:
    with pytest.raises(SnapshotError, match=r"^--cluster /nowhere\.yaml: not 'simulated', 'kube' or an existing"):
        live_model("/nowhere.yaml", None, 60, on_synced=lambda: None)


def test_one_look_reads_the_simulated_cluster_and_files() -> None:
    assert len(one_look("simulated").nodes) == 7
    with pytest.raises(SnapshotError, match=r"^cannot read snapshot /nowhere\.yaml"):
        one_look("/nowhere.yaml")
    assert [source_name(c) for c in ("simulated", "kube", "x.yaml")] == ["simulated", "kube", "snapshot x.yaml"]


def test_json_snapshots_are_read_as_json_and_yaml_ones_as_yaml(tmp_path: Path) -> None:
    # YAML 1.1 reads 1e3 as the string "1e3"; JSON reads it as a number: the parser shows through.
    assert documents.load_document('{"n": 1e3}') == {"n": 1000.0}
    assert documents.load_document("n: 1e3") == {"n": "1e3"}
    # YAML's flow style starts with a brace too, and still reads.
    assert documents.load_document("{nodes: []}") == {"nodes": []}
    path = tmp_path / "flow.yaml"
    path.write_text("{nodes: [{name: a, machine: dgx1-v100}]}")
    assert [n["metadata"]["name"] for n in load_snapshot(path).nodes] == ["a"]


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")
def test_yaml_goes_to_the_c_loader_where_pyyaml_has_it() -> None:
    loader: object = documents._YAML_LOADER  # typed as the pure loader; libyaml's is a sibling class
    assert loader is yaml.CSafeLoader
