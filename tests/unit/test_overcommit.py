"""A node is over-committed when its bound pods hold more than it has: whole GPUs per resource (and MIG
profile), or on one shared GPU more than all of it. The model flags it on the node, from watch events."""

from __future__ import annotations

from typing import Any

import pytest

from extender.cluster.bound_pods import read_bound_pod
from extender.cluster.node import BoundPod
from extender.cluster.state import node_state


def bound(name: str, *, limits: dict[str, str] | None = None, notes: dict[str, str] | None = None) -> BoundPod:
    obj = {
        "metadata": {"name": name, "namespace": "ml", "annotations": notes or {}},
        "spec": {"nodeName": "n", "containers": [{"name": "c", "resources": {"limits": limits or {}}}]},
    }
    found = read_bound_pod(obj).found
    assert found is not None
    return found[1]


def gpu_node(allocatable: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "n", "labels": labels or {}}, "status": {"allocatable": allocatable}}


def share(milli: int, index: str | None = None) -> dict[str, str]:
    notes = {"alibabacloud.com/gpu-milli": str(milli), "alibabacloud.com/gpu-count": "1"}
    return notes | ({"alibabacloud.com/gpu-index": index} if index else {})


ALIBABA_NODE = {
    "metadata": {"name": "n", "labels": {"alibabacloud.com/gpu-card-model": "V100M16"}},
    "status": {"capacity": {"alibabacloud.com/gpu-count": "2", "alibabacloud.com/gpu-milli": "2000"}},
}


@pytest.mark.parametrize(
    ("node", "pods", "expected"),
    [
        pytest.param(
            gpu_node({"nvidia.com/gpu": "8"}),
            [bound("a", limits={"nvidia.com/gpu": "4"}), bound("b", limits={"nvidia.com/gpu": "4"})],
            (),
            id="4 + 4 = 8 whole GPUs on 8: full, not over",
        ),
        pytest.param(
            gpu_node({"nvidia.com/gpu": "8"}),
            [bound("a", limits={"nvidia.com/gpu": "8"}), bound("b", limits={"nvidia.com/gpu": "2"})],
            ("nvidia.com/gpu: 10 bound, 8 allocatable",),
            id="8 + 2 = 10 whole GPUs on 8",
        ),
        pytest.param(
            gpu_node({"amd.com/gpu": "8"}),
            [bound(p, limits={"amd.com/gpu": "3"}) for p in "abc"],
            ("amd.com/gpu: 9 bound, 8 allocatable",),
            id="AMD: 3 × 3 = 9 on 8",
        ),
        pytest.param(
            gpu_node({"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-3g.40gb": "1"}),
            [bound("a", limits={"nvidia.com/mig-3g.40gb": "1"}), bound("b", limits={"nvidia.com/mig-3g.40gb": "1"})],
            ("nvidia.com/mig-3g.40gb: 2 bound, 1 allocatable",),
            id="MIG per profile: 2 × 3g.40gb on 1",
        ),
        pytest.param(
            ALIBABA_NODE,
            [bound("a", notes=share(600, "0")), bound("b", notes=share(400, "0")), bound("c", notes=share(900, "1"))],
            (),
            id="shares 600 + 400 = 1000 on GPU 0: full, not over",
        ),
        pytest.param(
            ALIBABA_NODE,
            [bound("a", notes=share(600, "1")), bound("b", notes=share(600, "1"))],
            ("GPU 1: 1200 milli bound of 1000",),
            id="shares 600 + 600 = 1200 milli recorded on GPU 1",
        ),
        pytest.param(
            ALIBABA_NODE,
            [bound(p, notes=share(700)) for p in "abc"],
            ("GPU 0: 1400 milli bound of 1000",),
            id="three 700s predicted on 2 GPUs: one each, the third where it over-commits least: 700 + 700 = 1400",
        ),
    ],
)
def test_a_node_is_flagged_when_its_bound_pods_hold_more_than_it_has(
    node: dict[str, Any], pods: list[BoundPod], expected: tuple[str, ...]
) -> None:
    assert node_state(node, pods).overcommitted == expected


def test_memory_shares_are_added_exactly_not_as_rounded_milli() -> None:
    # 3 × 5 GiB = 15 GiB fills a 15 GiB GPU exactly, though each rounds up to ⌈333.3⌉ = 334 milli (1002)
    node = {
        "metadata": {"name": "n"},
        "status": {"capacity": {"aliyun.com/gpu-mem": "15", "aliyun.com/gpu-count": "1"}},
    }
    pods = [bound(p, limits={"aliyun.com/gpu-mem": "5"}, notes={"ALIYUN_COM_GPU_MEM_IDX": "0"}) for p in "abc"]
    assert node_state(node, pods).overcommitted == ()
    more = [*pods, bound("d", limits={"aliyun.com/gpu-mem": "1"}, notes={"ALIYUN_COM_GPU_MEM_IDX": "0"})]
    assert node_state(node, more).overcommitted == ("GPU 0: 1067 milli bound of 1000",)  # ⌈16 / 15 × 1000⌉


def test_hami_cores_past_100_percent_on_one_gpu_are_over() -> None:
    devices = '[{"id":"GPU-0","index":0,"count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-L4","health":true}]'
    node = {"metadata": {"name": "n", "annotations": {"hami.io/node-nvidia-register": devices}},
            "status": {"capacity": {"nvidia.com/gpu": "10"}}}  # fmt: skip
    limits = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "4096", "nvidia.com/gpucores": "60"}
    pods = [bound(p, limits=limits, notes={"hami.io/vgpu-devices-allocated": "GPU-0,NVIDIA,4096,60:;"}) for p in "ab"]
    # memory 2 × 4096 of 24576 fits; cores 60 + 60 = 120 % do not
    assert node_state(node, pods).overcommitted == ("GPU 0: 120 % of its cores bound",)


def test_a_pod_only_taken_to_hold_the_whole_node_does_not_make_it_over_committed() -> None:
    node = gpu_node({"nvidia.com/gpu": "8"})
    unreadable = bound("x", limits={"nvidia.com/gpu": "lots"})
    assert unreadable.holds_all
    assert node_state(node, [unreadable, bound("a", limits={"nvidia.com/gpu": "2"})]).overcommitted == ()
