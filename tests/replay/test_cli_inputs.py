"""Nodes and Pods as Kubernetes objects become the replay's nodes and pod shapes, in every share convention."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from extender.advice.replay.kube_objects import (
    NO_MODEL,
    UNBOUNDED,
    ClusterNode,
    cluster_nodes,
    cluster_pods,
    parse_cpu_milli,
)
from extender.advice.replay.openb import ReplayInputError
from extender.advice.replay.specs import NodeSpec, PodShape
from gpu_advisor.cli import main
from gpu_advisor.replay_inputs import load_nodes


def _node(
    name: str, allocatable: dict[str, str], labels: dict[str, str] | None = None, **status: Any
) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "status": {"allocatable": allocatable, **status},
    }


def _pod(
    limits: dict[str, str] | None = None,
    requests: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    container = {"name": "main", "resources": {"limits": limits or {}, "requests": requests or {}}}
    return {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml", "annotations": annotations or {}},
        "spec": {"containers": [container], **spec},
    }


A100 = _node(
    "a100-a",
    {"cpu": "96", "memory": "512Gi", "nvidia.com/gpu": "4"},
    {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.memory": "40960"},
)
ALIBABA = _node(
    "openb-g2",
    {"cpu": "64000m", "memory": "262144Mi"},
    {"alibabacloud.com/gpu-card-model": "G2", "nvidia.com/gpu.memory": "40960"},
    capacity={"alibabacloud.com/gpu-count": "8", "alibabacloud.com/gpu-milli": "8000"},
)
HALF = {"nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "50"}
TIME_SLICED = _node(
    "t4-ts", {"nvidia.com/gpu": "16"}, {"nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.replicas": "4"}
)


def test_nodes_give_cpu_memory_physical_gpus_and_model_in_each_convention() -> None:
    nodes = [n.spec for n in cluster_nodes([A100, ALIBABA, TIME_SLICED])]
    assert nodes == [
        NodeSpec("a100-a", 96_000, 512 * 1024, 4, "NVIDIA-A100-SXM4-40GB"),
        NodeSpec("openb-g2", 64_000, 262_144, 8, "G2"),  # the Alibaba count and card model
        NodeSpec("t4-ts", UNBOUNDED, UNBOUNDED, 4, "Tesla-T4"),  # 16 replicas / 4 per GPU; no CPU said: no limit
    ]


@pytest.mark.parametrize(
    ("pod", "shape"),
    [
        (_pod(requests={"cpu": "500m", "memory": "1Gi"}), PodShape(500, 1024, 0, 0, "")),
        (
            _pod(
                requests={"cpu": "4"},
                annotations={
                    "alibabacloud.com/gpu-milli": "250",
                    "alibabacloud.com/gpu-count": "1",
                    "alibabacloud.com/gpu-card-model": "G2|T4",
                },
            ),
            PodShape(4000, 0, 1, 250, "G2|T4"),
        ),
        # HAMi: 25 % of the memory of one GPU is 250 milli
        (_pod({"nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "25"}), PodShape(0, 0, 1, 250, "")),
        # HAMi: 10240 MiB of the cluster's 40960 MiB GPUs = 10240 × 1000 / 40960 = 250 milli
        (_pod({"nvidia.com/gpu": "1", "nvidia.com/gpumem": "10240"}), PodShape(0, 0, 1, 250, "")),
        # Aliyun: 10 GiB (the device plugin's default unit) = 10240 MiB of 40960 = 250 milli
        (_pod({"aliyun.com/gpu-mem": "10"}), PodShape(0, 0, 1, 250, "")),
        # HAMi use-gputype matches models by substring, ignoring case
        (
            _pod(HALF, annotations={"nvidia.com/use-gputype": "a100"}),
            PodShape(0, 0, 1, 500, "NVIDIA-A100-SXM4-40GB"),
        ),
        (
            _pod(HALF, annotations={"nvidia.com/use-gputype": "H100"}),
            PodShape(0, 0, 1, 500, NO_MODEL),
        ),
        (
            _pod({"nvidia.com/gpu": "2"}, nodeSelector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}),
            PodShape(0, 0, 2, 1000, "NVIDIA-A100-SXM4-40GB"),
        ),
        # an init container counts as much as the largest of them: max(1 CPU app, 2 CPU init) = 2 CPU
        (
            _pod(requests={"cpu": "1"}, initContainers=[{"name": "i", "resources": {"requests": {"cpu": "2"}}}]),
            PodShape(2000, 0, 0, 0, ""),
        ),
        # no request: the limit is the request
        (_pod(limits={"cpu": "1500m", "memory": "2G"}), PodShape(1500, 1907, 0, 0, "")),
    ],
    ids=[
        "cpu-only", "alibaba", "hami-percent", "hami-mib", "aliyun-gib", "hami-use-type", "hami-type-not-in-cluster",
        "whole-gpus-by-product", "init-container-max", "limits-without-requests",
    ],
)  # fmt: skip
def test_pods_become_the_replays_shapes(pod: dict[str, Any], shape: PodShape) -> None:
    nodes = cluster_nodes([A100, ALIBABA])
    assert cluster_pods([pod], nodes)[0].shape == shape


def test_a_share_in_mib_needs_one_gpu_memory_size_across_the_cluster() -> None:
    mixed = (*cluster_nodes([A100]), ClusterNode(NodeSpec("h", 1, 1, 8, "H100"), 81920))
    with pytest.raises(ReplayInputError, match="do not report one GPU memory size"):
        cluster_pods([_pod({"nvidia.com/gpu": "1", "nvidia.com/gpumem": "10240"})], mixed)


def test_a_share_of_several_gpus_and_mig_slices_are_refused_by_name() -> None:
    nodes = cluster_nodes([A100])
    with pytest.raises(ReplayInputError, match="a share of one GPU, not of 2"):
        cluster_pods([_pod({"nvidia.com/gpu": "2", "nvidia.com/gpumem-percentage": "50"})], nodes)
    with pytest.raises(ReplayInputError, match="MIG slices"):
        cluster_pods([_pod({"nvidia.com/mig-1g.5gb": "1"})], nodes)


@pytest.mark.parametrize(("text", "milli"), [("500m", 500), ("2", 2000), ("0.1", 100), ("0.0001", 1), ("1.5m", 2)])
def test_cpu_quantities_round_up_to_a_milli_cpu(text: str, milli: int) -> None:
    assert parse_cpu_milli(text) == milli


def test_a_snapshot_file_gives_nodes_in_file_order(tmp_path: Path) -> None:
    snapshot = tmp_path / "snap.yaml"
    snapshot.write_text(
        "nodes:\n"
        "  - {name: b, gpus: 8, labels: {nvidia.com/gpu.product: L40S}}\n"
        "  - {name: a, gpus: 2, labels: {nvidia.com/gpu.product: T4}}\n"
    )
    assert [n.spec for n in load_nodes(str(snapshot))] == [
        NodeSpec("b", UNBOUNDED, UNBOUNDED, 8, "L40S"),
        NodeSpec("a", UNBOUNDED, UNBOUNDED, 2, "T4"),
    ]


def test_replay_of_pod_objects_on_a_kubectl_list_of_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cluster.json").write_text(json.dumps({"kind": "List", "items": [A100, ALIBABA]}))
    quarter = _pod({"nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "25"}, requests={"cpu": "1"})
    (tmp_path / "pods.yaml").write_text("\n---\n".join(json.dumps(quarter) for _ in range(40)))
    args = ["replay", "--nodes", str(tmp_path / "cluster.json"), "--pods", str(tmp_path / "pods.yaml")]
    assert main([*args, "--seeds", "1", "--policies", "FGD,BestFit", "--json", str(tmp_path / "r.json")]) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    # The drawn order tunes 40 quarter GPUs (10 GPUs) up towards 1.3 × 12 GPUs = 15.6 GPUs with copies:
    # 40 + 22 = 62 pods (15.5 GPUs; one more would pass 15.6). 12 GPUs hold 48 quarters: 14 dropped.
    assert doc["trace"] == "pods"
    assert doc["policies"]["BestFit"]["seeds"]["1"]["alloc_pct"]["50"] == 50.0
    assert doc["policies"]["FGD"]["unallocated_at_100"] == {"mean": 0.0, "sd": 0.0}
    assert "BestFit: 14 pods dropped" in capsys.readouterr().out
