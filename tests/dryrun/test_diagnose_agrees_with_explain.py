"""diagnose and explain give one verdict for a pending pod in every convention the advisor reads: whole
GPUs, Alibaba milli shares, HAMi, Aliyun, DRA claims. explain schedulable ⟺ diagnose finds nothing
GPU-related in the way (its answer is the application step); unschedulable ⟺ an earlier step explains."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.advice.replay.advisor_policy import replay_node_object
from gpu_advisor.cli import main
from tests.api.test_shared_gpus import COUNT, MILLI, alibaba_pod, aliyun_node, hami_node
from tests.dra.objects import cluster_items, pending_pod


def _limits(name: str, limits: dict[str, str]) -> dict[str, Any]:
    container = {"name": "c", "resources": {"limits": limits}}
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ml"}, "spec": {"containers": [container]}}


def _dra(name: str, template: str) -> dict[str, Any]:
    pod = copy.deepcopy(pending_pod({"resourceClaimTemplateName": template}))
    pod |= {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}}
    return pod


def _alibaba_whole(name: str, count: int) -> dict[str, Any]:
    pod = alibaba_pod(name, 1000, count)
    pod["metadata"]["annotations"] |= {MILLI: "1000", COUNT: str(count)}
    return pod


PENDING = [
    alibaba_pod("share-400", 400),
    alibaba_pod("share-800", 800),
    alibaba_pod("share-on-a100", 400, model="A100-SXM4-80GB"),
    _alibaba_whole("alibaba-2-whole", 2),
    _alibaba_whole("alibaba-9-whole", 9),
    _limits("hami-4000", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "4000"}),
    _limits("hami-20000", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "20000"}),
    _limits("hami-cores", {"nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "50", "nvidia.com/gpucores": "60"}),
    _limits("aliyun-6", {"aliyun.com/gpu-mem": "6"}),
    _limits("aliyun-20", {"aliyun.com/gpu-mem": "20"}),
    _dra("dra-one", "one-gpu"),
    _dra("dra-two", "two-gpus"),
]


def _placed(pod: dict[str, Any], node: str) -> dict[str, Any]:
    return pod | {"spec": {**pod["spec"], "nodeName": node}, "status": {"phase": "Running"}}


def _mixed(tmp_path: Path) -> str:
    """g2: 8 G2 GPUs, GPU 0 at 300 milli free, GPU 1 at 500; t4: 2 idle T4s; a HAMi and an Aliyun node
    of two 16 GiB and 15 GiB GPUs; two DRA nodes of 4 H100 (two GPUs held by a claim)."""
    items = [
        replay_node_object("g2", "G2", 96_000, 786_432, 8),
        replay_node_object("t4", "T4", 64_000, 262_144, 2),
        hami_node("hami"),
        aliyun_node("aliyun"),
        _placed(alibaba_pod("a", 700, gpu=0), "g2"),
        _placed(alibaba_pod("b", 500, gpu=1), "g2"),
        *cluster_items(),
        *PENDING,
    ]
    for item in items:
        item.setdefault("apiVersion", "v1")
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def _views(cluster: str, pod: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Any, Any]:
    manifest = tmp_path / f"{pod['metadata']['name']}.yaml"
    manifest.write_text(yaml.safe_dump(pod))
    main(["explain", str(manifest), "--cluster", cluster, "--json"])
    explained = json.loads(capsys.readouterr().out)
    meta = pod["metadata"]
    assert main(["diagnose", meta["name"], "-n", meta["namespace"], "--cluster", cluster, "--json"]) == 0
    return explained, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("pod", PENDING, ids=[p["metadata"]["name"] for p in PENDING])
def test_diagnose_and_explain_agree(pod: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    explained, diagnosed = _views(_mixed(tmp_path), pod, tmp_path, capsys)
    assert diagnosed["request"] == explained["request"]
    if explained["schedulable"]:
        assert diagnosed["explained_by"] == "application", diagnosed
        fits = next(s for s in diagnosed["steps"] if s["step"] == "placement")["finding"]
        assert fits == "it fits on " + ", ".join(sorted(r["node"] for r in explained["ranked"]))
    else:
        assert diagnosed["explained_by"] in {"allocation", "placement", "hold"}, (explained["verdict"], diagnosed)


EXPECTED = {  # what explain says: the table above must not pass by everything being unschedulable
    "share-400": True,
    "share-800": True,
    "share-on-a100": False,
    "alibaba-2-whole": True,
    "alibaba-9-whole": False,
    "hami-4000": True,
    "hami-20000": False,
    "hami-cores": True,
    "aliyun-6": True,
    "aliyun-20": False,
    "dra-one": True,
    "dra-two": True,
}


def test_the_table_covers_both_answers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = _mixed(tmp_path)
    found = {p["metadata"]["name"]: _views(cluster, p, tmp_path, capsys)[0]["schedulable"] for p in PENDING}
    assert found == EXPECTED


def test_a_share_beside_two_idle_gpus_and_a_gap_is_not_all_allocated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The case that was reported: diagnose counted only whole nvidia.com/gpu."""
    items = [
        replay_node_object("idle", "G2", 64_000, 262_144, 2),
        replay_node_object("half", "G2", 64_000, 262_144, 2),
        _placed(alibaba_pod("s", 500, gpu=0), "half"),
        _placed(alibaba_pod("w", 1000, gpu=1), "half"),
        alibaba_pod("p", 400),
    ]
    for item in items:
        item.setdefault("apiVersion", "v1")
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    explained, diagnosed = _views(str(path), alibaba_pod("p", 400), tmp_path, capsys)
    assert explained["verdict"].startswith("schedulable on 2 nodes")
    allocation = diagnosed["steps"][0]
    assert allocation["finding"] == "2 node(s) have 1× 400 milli-GPU share free"
    assert allocation["evidence"] == ["half: milli free per GPU 500,0", "idle: milli free per GPU 1000,1000"]
    assert diagnosed["explained_by"] == "application"
