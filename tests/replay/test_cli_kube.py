"""`gpu-advisor replay --scheduler-config`: kube-scheduler's scoring in the replay, and its input errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_advisor.cli import main

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,8000,16384,1,T4\nn1,64000,262144,1,T4\n"
PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np0,1000,1024,1,600,\np1,1000,1024,1,600,\n"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(PODS)
    (tmp_path / "orders").mkdir()
    (tmp_path / "orders" / "pods.order.txt").write_text("1\t0 1\n")
    (tmp_path / "orders" / "pods.nodes.txt").write_text("1\t0 1\n")
    return tmp_path


def _args(d: Path, config: str) -> list[str]:
    nodes, pods, orders = str(d / "nodes.csv"), str(d / "pods.csv"), str(d / "orders")
    return [
        "replay",
        "--nodes",
        nodes,
        "--pods",
        pods,
        "--orders",
        orders,
        "--seeds",
        "1",
        "--scheduler-config",
        config,
    ]


def test_kube_default_overcommits_the_gpu_it_cannot_see_and_says_so(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*_args(files, "kube-default"), "--json", str(files / "out.json")]) == 0
    out = capsys.readouterr().out
    assert "kube-scheduler" in out and "GPU pods placed without the advisor: 2.0 per run (2–2)" in out
    document = json.loads((files / "out.json").read_text())
    assert document["kube_scheduler"]["seeds"]["1"]["overcommitted_pods"] == 1
    assert list(document["policies"]) == ["kube-scheduler"]


def test_printed_asks_the_advisor_about_every_pod(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*_args(files, "printed"), "--policies", "advisor"]) == 0
    out = capsys.readouterr().out
    assert "extender weight 131 (all pods)" in out and "without the advisor: 0.0 per run" in out
    assert "GPU pods bound off the advisor's best node: 0.0 per run (0–0)" in out


# What `scheduler-config --dra` printed before the profile: no managedResources, weight 5, default plugins.
_WEIGHT_5 = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: gpu-advisor
extenders:
  - urlPrefix: "http://127.0.0.1:1/scheduler"
    filterVerb: filter
    prioritizeVerb: prioritize
    weight: 5
    nodeCacheCapable: true
    ignorable: true
"""


def test_a_file_at_weight_5_replays_with_the_default_plugins(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (files / "weight5.yaml").write_text(_WEIGHT_5)
    assert main(_args(files, str(files / "weight5.yaml"))) == 0
    out = capsys.readouterr().out
    assert "extender weight 5 (all pods)" in out and "NodeResourcesBalancedAllocation" in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: Pod\napiVersion: v1\n", "'Pod' is not KubeSchedulerConfiguration"),
        ("a: [", "not YAML"),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            "percentageOfNodesToScore: 101\n",
            "percentageOfNodesToScore: 101 is not between 0 and 100",
        ),
    ],
)
def test_a_bad_configuration_is_one_line_and_exit_2(
    files: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    (files / "config.yaml").write_text(text)
    assert main(_args(files, str(files / "config.yaml"))) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_missing_configuration_names_the_built_in_ones(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_args(files, str(files / "nope.yaml"))) == 2
    assert "kube-default, printed, printed-managed" in capsys.readouterr().err
