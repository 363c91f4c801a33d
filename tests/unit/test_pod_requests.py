"""The pod of a kube-scheduler call, read once per content: replicas differ only in their names."""

from __future__ import annotations

from typing import Any

import pytest

from extender.http.pod_requests import PodRequests
from extender.http.shapes import ShapeError


def pod(name: str, gpus: str = "2", annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "annotations": annotations or {}},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]},
        "status": {"phase": "Pending"},
    }


def test_replicas_that_differ_only_in_name_share_one_reading() -> None:
    pods = PodRequests()
    first, second = pods.request(pod("web-1")), pods.request(pod("web-2"))
    assert first is second and first.gpus == 2


@pytest.mark.parametrize(
    ("changed", "other"),
    [
        ("the GPU count", pod("web-1", gpus="4")),
        ("an annotation", pod("web-1", annotations={"gpu-advisor.io/interconnect": "nvlink"})),
    ],
)
def test_a_pod_that_asks_something_else_is_read_afresh(changed: str, other: dict[str, Any]) -> None:
    pods = PodRequests()
    assert pods.request(pod("web-1")) != pods.request(other), changed


def test_a_pod_nested_deeper_than_any_real_one_is_refused_before_it_is_walked() -> None:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(300):
        inner["x"] = {}
        inner = inner["x"]
    with pytest.raises(ShapeError, match="deeper than the limit of 100 levels"):
        PodRequests().request({"metadata": {"annotations": deep}, "spec": {}})


def test_an_unreadable_knob_fails_open_to_the_gpu_count() -> None:
    found = PodRequests().request(pod("p", annotations={"gpu-advisor.io/interconnect": "warp"}))
    assert found.gpus == 2 and found.interconnect is None and found.invalid is None
