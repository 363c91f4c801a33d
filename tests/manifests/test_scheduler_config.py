"""The shipped scheduler configuration is what ``gpu-advisor scheduler-config`` prints, and under it a real
kube-scheduler binds where the advisor ranks best: every pod reaches the advisor, every node is scored, and
one point of the advisor's score outweighs every enabled score plugin."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from extender.model.mig_profiles import all_profiles
from gpu_advisor.cli import main
from gpu_advisor.cli.scheduler_config import (
    DEFAULT_SCORE_PLUGINS,
    DEFAULT_WEIGHT,
    OFF_IN_PROFILE,
    managed_resources,
    outweighing,
    scheduler_config,
)

MANIFESTS = Path(__file__).parents[2] / "manifests"
SHIPPED = MANIFESTS / "scheduler" / "config.yaml"
CHART_FILES = MANIFESTS / "helm" / "gpu-advisor" / "files"


def test_the_shipped_configs_are_the_commands_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scheduler-config"]) == 0
    printed = capsys.readouterr().out
    assert printed == scheduler_config()
    assert SHIPPED.read_text() == printed, "run: gpu-advisor scheduler-config > manifests/scheduler/config.yaml"
    assert (CHART_FILES / "scheduler-config.yaml").read_text() == printed
    managed = (CHART_FILES / "scheduler-config-managed.yaml").read_text()
    assert managed == scheduler_config(managed=True), "run: gpu-advisor scheduler-config --managed-resources > …"


def test_by_default_every_pod_of_the_profile_reaches_the_advisor_and_every_node_is_scored() -> None:
    config = yaml.safe_load(SHIPPED.read_text())
    (extender,) = config["extenders"]
    (profile,) = config["profiles"]
    # No managedResources: kube-scheduler's IsInterested is then true for every pod (annotation shares,
    # HAMi and Aliyun resources, DRA claims included).
    assert "managedResources" not in extender
    assert profile["schedulerName"] == "gpu-advisor" and profile["percentageOfNodesToScore"] == 100
    assert extender["nodeCacheCapable"] is True
    # kube-scheduler counts no annotation share: while the advisor is away its pods wait (not ignorable),
    # are retried within podMaxBackoffSeconds of its return, and every binding passes its re-check.
    assert extender["ignorable"] is False and extender["bindVerb"] == "bind"
    assert config["podMaxBackoffSeconds"] == 5


@pytest.mark.parametrize(
    ("plugins", "weight"),
    [
        # v1.36's defaults less NodeResourcesBalancedAllocation: 3+2+1+1+2+2+1+1 = 13, × 100 = 1300 at most;
        # weight 131 makes a wire point worth 1310; 130 only 1300, a tie.
        ({k: v for k, v in DEFAULT_SCORE_PLUGINS.items() if k not in OFF_IN_PROFILE}, 131),
        # all nine defaults: 14 × 100 = 1400 → 141
        (DEFAULT_SCORE_PLUGINS, 141),
        # NodeResourcesFit alone: 100 → 11 (110 > 100)
        ({"NodeResourcesFit": 1}, 11),
        # the measured trap: weight 5 is 50 a point, less than NodeResourcesFit + BalancedAllocation's 200
        ({"NodeResourcesFit": 1, "NodeResourcesBalancedAllocation": 1}, 21),
    ],
)
def test_the_weight_printed_makes_one_wire_point_outweigh_the_enabled_plugins(
    plugins: dict[str, int], weight: int
) -> None:
    assert outweighing(plugins) == weight
    assert weight * 10 > sum(plugins.values()) * 100 >= (weight - 1) * 10


def test_the_profile_packs_and_its_weight_is_the_outweighing_one() -> None:
    config = yaml.safe_load(SHIPPED.read_text())
    (profile,) = config["profiles"]
    assert profile["plugins"]["score"]["disabled"] == [{"name": "NodeResourcesBalancedAllocation"}]
    args = {c["name"]: c["args"] for c in profile["pluginConfig"]}
    assert args["NodeResourcesFit"]["scoringStrategy"]["type"] == "MostAllocated"
    assert args["PodTopologySpread"] == {"defaultConstraints": [], "defaultingType": "List"}
    assert config["extenders"][0]["weight"] == DEFAULT_WEIGHT == 131


def test_managed_resources_lists_every_mig_profile_of_the_table() -> None:
    (extender,) = yaml.safe_load(scheduler_config(managed=True))["extenders"]
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
    assert exited.value.code == 2 and "0 is not between 1 and 100000" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["scheduler-config", "--dra", "--managed-resources"])
    assert exited.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("weight", "says"),
    [
        (5, "counts 50 (weight x 10), less than\n#    the 1300"),  # 5 × 10 = 50 < 13 plugin weight × 100
        (130, "counts 1300 (weight x 10), no more than\n#    the 1300"),  # 130 × 10 = 1300: a tie
        (131, "counts 1310 (weight x 10), more than\n#    the 1300"),  # 131 × 10 = 1310 > 1300
        (1000, "counts 10000 (weight x 10), more than\n#    the 1300"),
    ],
)
def test_the_weight_comment_is_true_for_the_weight_given(weight: int, says: str) -> None:
    printed = scheduler_config(weight=weight)
    assert says in printed
    assert ("so kube-scheduler binds there" in printed) is (weight >= DEFAULT_WEIGHT)
    assert ("may bind elsewhere" in printed) is (weight < DEFAULT_WEIGHT)


def test_dra_is_still_accepted_prints_the_default_and_says_it_does_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scheduler-config", "--dra"]) == 0
    printed = capsys.readouterr()
    assert printed.out == scheduler_config()
    assert printed.err.startswith("gpu-advisor scheduler-config: --dra is deprecated and has no effect")


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


def test_a_scheduler_run_outside_a_pod_gets_its_kubeconfig_in_the_configuration(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """kube-scheduler ignores --kubeconfig when given --config: its credentials go in clientConnection."""
    assert main(["scheduler-config", "--kubeconfig", "/etc/kube-scheduler/kubeconfig"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["clientConnection"] == {"kubeconfig": "/etc/kube-scheduler/kubeconfig", "qps": 300, "burst": 600}
