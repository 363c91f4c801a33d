"""A pod's request is read once per content: replicas, and one pod before and after its binding, share
one reading; anything the reader reads keeps two pods apart."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extender.model.pods import PodSpecError, ShareSpecError, pod_request


def pod(name: str = "web-1", gpus: str = "1", **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}, "volumeMounts": [{"name": name}]}
    return {
        "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}", "resourceVersion": "7"},
        "spec": {"containers": [container], "volumes": [{"name": f"kube-api-access-{name}"}], **spec},
    }


def test_replicas_bound_or_pending_share_one_reading() -> None:
    first = pod_request(pod("web-1"))
    # another name, uid, token volume, and bound to a node: none of it is read
    assert pod_request(pod("web-2", nodeName="gpu-7")) is first
    assert first.gpus == 1


@pytest.mark.parametrize(
    ("change", "gpus"),
    [
        (lambda p: p["spec"]["containers"][0]["resources"]["limits"].update({"nvidia.com/gpu": "2"}), 2),
        (lambda p: p["metadata"].update({"annotations": {"gpu-advisor.io/interconnect": "nvlink"}}), 1),
        (lambda p: p["metadata"].update({"namespace": "other"}), 1),
        (lambda p: p["spec"].update({"priority": 5}), 1),
    ],
)
def test_what_the_reader_reads_keeps_pods_apart(change: Any, gpus: int) -> None:
    base = pod()
    other = copy.deepcopy(base)
    change(other)
    assert pod_request(other) is not pod_request(base)
    assert pod_request(other).gpus == gpus


def test_an_unreadable_pod_raises_afresh_each_time() -> None:
    bad = pod(gpus="half")
    with pytest.raises(PodSpecError) as first:
        pod_request(bad)
    with pytest.raises(PodSpecError) as again:
        pod_request(pod("web-9", gpus="half"))
    assert str(first.value) == str(again.value) and first.value is not again.value
    share = pod(name="s")
    share["metadata"]["annotations"] = {"alibabacloud.com/gpu-milli": "lots", "alibabacloud.com/gpu-count": "1"}
    for _ in range(2):
        with pytest.raises(ShareSpecError):
            pod_request(copy.deepcopy(share))


def test_a_name_that_is_not_text_is_read_without_the_memo() -> None:
    odd = pod()
    odd["metadata"]["name"] = 12
    assert pod_request(odd) == pod_request(pod()) and pod_request(odd) is not pod_request(pod())
