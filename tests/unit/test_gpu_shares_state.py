"""The cluster model's free share per GPU: from each convention's assignment annotation, else predicted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from extender.cluster.shares import assignment, choose_gpu, take_gpus
from extender.cluster.state import bound_pod, node_state


def pod(name: str, annotations: dict[str, str], limits: dict[str, str] | None = None, at: int = 0) -> Any:
    obj = {
        "metadata": {"name": name, "namespace": "ml", "annotations": annotations},
        "spec": {"nodeName": "n", "containers": [{"name": "c", "resources": {"limits": limits or {}}}]},
        "status": {
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": f"2026-12-03T10:00:0{at}Z"}]
        },
    }
    found = bound_pod(obj)
    assert found is not None
    return found[1]


def alibaba(milli: int, index: str | None = None) -> dict[str, str]:
    notes = {"alibabacloud.com/gpu-milli": str(milli), "alibabacloud.com/gpu-count": "1"}
    return notes | ({"alibabacloud.com/gpu-index": index} if index is not None else {})


ALIBABA_NODE = {
    "metadata": {"name": "n", "labels": {"alibabacloud.com/gpu-card-model": "G2"}},
    "status": {"capacity": {"alibabacloud.com/gpu-count": "4", "cpu": "8", "memory": "32Gi"}},
}


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({"alibabacloud.com/gpu-index": "2-3"}, ("2", "3")),
        ({"ALIYUN_COM_GPU_MEM_IDX": "1"}, ("1",)),
        (
            {"hami.io/vgpu-devices-allocated": "GPU-a,NVIDIA,4000,30:GPU-b,NVIDIA,4000,30:;GPU-a,NVIDIA,1000,0:;"},
            ("GPU-a", "GPU-b"),
        ),
        ({}, ()),
    ],
)
def test_each_conventions_assignment_annotation_names_the_gpus(
    annotations: dict[str, str], expected: tuple[str, ...]
) -> None:
    assert assignment(annotations) == expected


def test_assigned_pods_take_their_share_of_the_gpu_they_name() -> None:
    state = node_state(ALIBABA_NODE, [pod("a", alibaba(300, "2"), at=1), pod("b", alibaba(600, "2"), at=2)])
    assert state.shares is not None and state.shares.free == (1000, 1000, 100, 1000)
    assert state.gpu_model == "G2" and state.shares.in_use


def test_unassigned_pods_are_predicted_best_fit_in_bind_order() -> None:
    # a (600) opens GPU 0; b (300) fits GPU 0's 400 best; c (500) then needs an idle GPU: GPU 1
    pods = [pod("c", alibaba(500), at=3), pod("a", alibaba(600), at=1), pod("b", alibaba(300), at=2)]
    state = node_state(ALIBABA_NODE, pods)
    assert state.shares is not None and state.shares.free == (100, 500, 1000, 1000)


def test_whole_gpus_take_the_lowest_index_idle_ones_and_best_fit_picks_the_tightest() -> None:
    assert take_gpus((1000, 400, 1000, 1000), 1000, 2) == (0, 2)
    assert choose_gpu((1000, 400, 500), 400) == 1 and choose_gpu((300, 200), 400) == -1


def test_a_hami_pod_is_placed_on_the_gpu_its_uuid_names() -> None:
    devices = [
        {"id": f"GPU-{i}", "index": i, "count": 10, "devmem": 16000, "devcore": 100, "type": "T4", "health": True}
        for i in range(2)
    ]
    node = {
        "metadata": {"name": "n", "annotations": {"hami.io/node-nvidia-register": json.dumps(devices)}},
        "status": {"capacity": {"nvidia.com/gpu": "20"}},
    }
    notes = {"hami.io/vgpu-devices-allocated": "GPU-1,NVIDIA,4000,0:;"}
    state = node_state(node, [pod("h", notes, {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "4000"})])
    assert state.shares is not None and state.shares.free == (1000, 750)  # 4000 of 16000 MiB


def test_cpu_only_pods_count_towards_the_nodes_requested_cpu_and_memory() -> None:
    cpu_pod = pod("w", {}, {"cpu": "3", "memory": "2Gi"})
    state = node_state(ALIBABA_NODE, [cpu_pod])
    assert (state.cpu_free, state.memory_free, state.pods) == (5000, 30 * 1024, ())
