"""Which group a pod belongs to, read from what each workload controller writes on its pods."""

from __future__ import annotations

import re
from typing import Any

import pytest

from extender.cluster.bound_pods import read_bound_pod
from extender.model.pod_groups import PodGroup, pod_group
from extender.model.pods import PodSpecError, pod_request


@pytest.mark.parametrize(
    ("labels", "annotations", "group"),
    [
        (
            {"jobset.sigs.k8s.io/jobset-name": "train", "jobset.sigs.k8s.io/global-replicas": "8"},
            {},
            PodGroup("JobSet", "ml/train", 8),
        ),
        (  # older JobSets write only the replicated job's replicas
            {"jobset.sigs.k8s.io/jobset-name": "train"},
            {"jobset.sigs.k8s.io/replicatedjob-replicas": "4"},
            PodGroup("JobSet", "ml/train", 4),
        ),
        (  # each replica of a LeaderWorkerSet is its own group of `size` pods
            {"leaderworkerset.sigs.k8s.io/name": "llm", "leaderworkerset.sigs.k8s.io/group-index": "2"},
            {"leaderworkerset.sigs.k8s.io/size": "4"},
            PodGroup("LeaderWorkerSet", "ml/llm/2", 4),
        ),
        ({"training.kubeflow.org/job-name": "bert"}, {}, PodGroup("Kubeflow job", "ml/bert", None)),
        (  # the knob says the size the pod does not carry
            {"training.kubeflow.org/job-name": "bert"},
            {"gpu-advisor.io/group-size": "16"},
            PodGroup("Kubeflow job", "ml/bert", 16),
        ),
        ({"scheduling.x-k8s.io/pod-group": "pg"}, {}, PodGroup("PodGroup", "ml/pg", None)),
        ({}, {"pod-group-name": "kai-pg"}, PodGroup("PodGroup", "ml/kai-pg", None)),
        ({}, {"scheduling.k8s.io/group-name": "volcano-pg"}, PodGroup("PodGroup", "ml/volcano-pg", None)),
        ({"app": "web"}, {}, None),
    ],
)
def test_the_group_a_pod_belongs_to(
    labels: dict[str, str], annotations: dict[str, str], group: PodGroup | None
) -> None:
    assert pod_group({"namespace": "ml", "labels": labels, "annotations": annotations}) == group


def gpu_pod(annotations: dict[str, str], node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}
    if node:
        spec["nodeName"] = node
    labels = {"jobset.sigs.k8s.io/jobset-name": "train"}
    return {"metadata": {"name": "w", "namespace": "ml", "labels": labels, "annotations": annotations}, "spec": spec}


def test_a_bad_group_size_is_refused_with_a_message() -> None:
    with pytest.raises(PodSpecError, match=re.escape("gpu-advisor.io/group-size: 'eight' is not a pod count")):
        pod_request(gpu_pod({"gpu-advisor.io/group-size": "eight"}))


def test_a_running_pod_with_a_bad_group_size_still_holds_its_four_gpus() -> None:
    reading = read_bound_pod(gpu_pod({"gpu-advisor.io/group-size": "eight"}, node="tray-1"))
    assert reading.found is not None
    node, pod = reading.found
    assert (node, pod.request.gpus, pod.holds_all) == ("tray-1", 4, False)
    assert pod.request.group == PodGroup("JobSet", "ml/train", None)
    assert [p.reason for p in reading.problems] == ["annotation"]
