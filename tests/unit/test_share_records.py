"""Which GPU a share really got: each sharing binder's record on the pod, in its real format; predicted only
where nothing readable is recorded, and an unreadable record counted as invalid, never raised."""

from __future__ import annotations

import json
from typing import Any

import pytest

from extender.cluster.bound_pods import ASSIGNMENT, read_bound_pod
from extender.cluster.shares import read_assignment
from extender.cluster.state import node_state

# Real values: the FGD simulator writes "2-3" (GpuIdStrToIntList), Aliyun's extender fmt.Sprintf("%d", devId),
# HAMi EncodePodSingleDevice: "uuid,type,usedmem,usedcores:" per device, ";" after each container.
UUID_A, UUID_B = "GPU-6c8e29a3-0f3c-7b1e-9c55-1d2f3a4b5c6d", "GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"
TWO_CONTAINERS = f"{UUID_A},NVIDIA,3000,30:{UUID_B},NVIDIA,3000,30:;{UUID_A},NVIDIA,1000,0:;"


@pytest.mark.parametrize(
    ("annotations", "gpus", "problem"),
    [
        pytest.param({"alibabacloud.com/gpu-index": "1"}, ("1",), None, id="alibaba one GPU"),
        pytest.param({"alibabacloud.com/gpu-index": "0-1-2-3"}, ("0", "1", "2", "3"), None, id="alibaba four GPUs"),
        pytest.param({"alibabacloud.com/gpu-index": "2,3"}, (), "not GPU indices joined by '-'", id="alibaba commas"),
        pytest.param({"alibabacloud.com/gpu-index": "-1"}, (), "not GPU indices", id="alibaba negative"),
        pytest.param(
            {"ALIYUN_COM_GPU_MEM_IDX": "3", "ALIYUN_COM_GPU_MEM_ASSIGNED": "false"}, ("3",), None, id="aliyun index"
        ),
        pytest.param({"ALIYUN_COM_GPU_MEM_IDX": "1-2"}, (), "not one GPU index", id="aliyun two indices"),
        pytest.param({"ALIYUN_COM_GPU_MEM_IDX": "gpu0"}, (), "not one GPU index", id="aliyun a name"),
        pytest.param(
            {"hami.io/vgpu-devices-allocated": f"{UUID_A},NVIDIA,3000,30:;"}, (UUID_A,), None, id="hami one device"
        ),
        pytest.param(
            {"hami.io/vgpu-devices-allocated": TWO_CONTAINERS},
            (UUID_A, UUID_B),
            None,
            id="hami two containers, a device named twice",
        ),
        pytest.param(
            {"hami.io/vgpu-devices-allocated": ";", "hami.io/vgpu-devices-to-allocate": f"{UUID_B},NVIDIA,2000,0:;"},
            (UUID_B,),
            None,
            id="hami to-allocate when allocated is empty",
        ),
        pytest.param(
            {"hami.io/vgpu-devices-allocated": f"{UUID_A},NVIDIA:;"},
            (),
            "is not uuid,type,usedmem,usedcores",
            id="hami device short of fields",
        ),
        pytest.param(
            {"hami.io/vgpu-devices-allocated": f"{UUID_A},NVIDIA,3GB,30:;"},
            (),
            "is not uuid,type,usedmem",
            id="hami memory not a number",
        ),
        pytest.param({}, (), None, id="no record"),
    ],
)
def test_each_binders_record_names_the_gpus_or_says_why_it_cannot(
    annotations: dict[str, str], gpus: tuple[str, ...], problem: str | None
) -> None:
    found, why = read_assignment(annotations)
    assert found == gpus
    assert (why is None) if problem is None else (why is not None and problem in why)


def share_pod(name: str, annotations: dict[str, str], limits: dict[str, str] | None = None, at: int = 0) -> Any:
    return {
        "metadata": {"name": name, "namespace": "ml", "annotations": annotations},
        "spec": {"nodeName": "n", "containers": [{"name": "c", "resources": {"limits": limits or {}}}]},
        "status": {
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": f"2026-12-03T10:00:0{at}Z"}]
        },
    }


MILLI = {"alibabacloud.com/gpu-milli": "500", "alibabacloud.com/gpu-count": "1"}
ALIBABA_NODE = {
    "metadata": {"name": "n", "labels": {"alibabacloud.com/gpu-card-model": "G2"}},
    "status": {"capacity": {"alibabacloud.com/gpu-count": "4"}},
}


def test_an_unreadable_record_is_counted_invalid_and_the_gpu_predicted() -> None:
    reading = read_bound_pod(share_pod("p", MILLI | {"alibabacloud.com/gpu-index": "two"}))
    assert reading.found is not None
    assert [(p.reason, p.name) for p in reading.problems] == [(ASSIGNMENT, "ml/p")]
    assert "its GPUs predicted" in reading.problems[0].detail
    state = node_state(ALIBABA_NODE, [reading.found[1]])
    assert state.shares is not None and state.shares.free == (500, 1000, 1000, 1000)  # best fit: GPU 0


def test_a_recorded_gpu_wins_over_the_prediction() -> None:
    # prediction would put b (500) beside a on GPU 0; the simulator recorded GPU 3
    pods = [
        share_pod("a", MILLI | {"alibabacloud.com/gpu-index": "0"}, at=1),
        share_pod("b", MILLI | {"alibabacloud.com/gpu-index": "3"}, at=2),
    ]
    bound = [found[1] for p in pods if (found := read_bound_pod(p).found) is not None]
    state = node_state(ALIBABA_NODE, bound)
    assert state.shares is not None and state.shares.free == (500, 1000, 1000, 500)


def test_an_aliyun_pod_takes_its_memory_of_the_gpu_its_extender_recorded() -> None:
    node = {
        "metadata": {"name": "n"},
        "status": {"capacity": {"aliyun.com/gpu-mem": "30", "aliyun.com/gpu-count": "2"}},
    }
    reading = read_bound_pod(share_pod("a", {"ALIYUN_COM_GPU_MEM_IDX": "1"}, {"aliyun.com/gpu-mem": "3"}))
    assert reading.found is not None and reading.problems == ()
    state = node_state(node, [reading.found[1]])
    assert state.shares is not None and state.shares.free == (1000, 800)  # 3 GiB of 15 GiB: 200 milli


def test_a_hami_pod_is_placed_by_the_uuid_its_scheduler_recorded() -> None:
    devices = [
        {"id": uuid, "index": i, "count": 10, "devmem": 24576, "devcore": 100, "type": "NVIDIA-L4", "health": True}
        for i, uuid in enumerate((UUID_A, UUID_B))
    ]
    node = {
        "metadata": {"name": "n", "annotations": {"hami.io/node-nvidia-register": json.dumps(devices)}},
        "status": {"capacity": {"nvidia.com/gpu": "20"}},
    }
    record = {"hami.io/vgpu-devices-allocated": f"{UUID_B},NVIDIA,6144,0:;"}
    reading = read_bound_pod(share_pod("h", record, {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "6144"}))
    assert reading.found is not None and reading.problems == ()
    state = node_state(node, [reading.found[1]])
    assert state.shares is not None and state.shares.free == (1000, 750)  # 6144 of 24576 MiB
