"""The shipped scheduler configuration is what ``gpu-advisor scheduler-config`` prints, and it hands the
advisor every pod that asks for a MIG profile NVIDIA documents."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from extender.model.mig_profiles import all_profiles
from gpu_advisor.cli import main
from gpu_advisor.cli.scheduler_config import managed_resources, scheduler_config

SHIPPED = Path(__file__).parents[2] / "manifests" / "scheduler" / "config.yaml"


def test_the_shipped_config_is_the_commands_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scheduler-config"]) == 0
    printed = capsys.readouterr().out
    assert printed == scheduler_config()
    assert SHIPPED.read_text() == printed, "run: gpu-advisor scheduler-config > manifests/scheduler/config.yaml"


def test_every_mig_profile_of_the_table_is_a_managed_resource() -> None:
    (extender,) = yaml.safe_load(SHIPPED.read_text())["extenders"]
    names = [r["name"] for r in extender["managedResources"]]
    assert names == list(managed_resources()) and len(names) == len(set(names))
    assert {f"nvidia.com/mig-{p}" for p in all_profiles()} <= set(names)
    # The A30's, H100 NVL's, GH200's, H200's and B200's smallest slices, missing from the hand-written list.
    for profile in ("1g.6gb", "2g.12gb", "4g.24gb", "1g.12gb", "1g.18gb", "1g.23gb", "7g.180gb"):
        assert f"nvidia.com/mig-{profile}" in names


def test_url_and_weight_can_be_chosen_and_bad_weights_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scheduler-config", "--url", "http://127.0.0.1:8080/scheduler", "--weight", "3"]) == 0
    config = yaml.safe_load(capsys.readouterr().out)
    assert config["extenders"][0]["urlPrefix"] == "http://127.0.0.1:8080/scheduler"
    assert config["extenders"][0]["weight"] == 3
    with pytest.raises(SystemExit) as exited:
        main(["scheduler-config", "--weight", "0"])
    assert exited.value.code == 2 and "0 is not between 1 and 100" in capsys.readouterr().err


def test_a_pod_asking_for_an_a30_slice_is_judged_by_the_extender(api: TestClient) -> None:
    pod = {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/mig-1g.6gb": "1"}}}]},
    }
    snapshot = {
        "nodes": [{"name": "a30-a", "gpus": 0, "mig": {"1g.6gb": 4}}, {"name": "a100", "gpus": 0, "mig": {"1g.5gb": 7}}]
    }
    answer = api.post("/v1/dry-run", json={"manifest": pod, "snapshot": snapshot}).json()
    assert answer["verdict"] == "schedulable on 1 node; best: a30-a with MIG 1g.6gb: 4 of 4 free"
    assert answer["filtered"][0]["reason"] == "offers no MIG 1g.6gb (MIG profiles here: 1g.5gb)"
