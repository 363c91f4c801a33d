"""Which pod group a pod belongs to, and how many pods the group has, from its labels and annotations.

A multi-node job is only as fast as its slowest link, so its pods belong together (one NVLink clique on
a rack-scale machine). The workload controllers mark their pods; what each writes on the pod:

- JobSet: label ``jobset.sigs.k8s.io/jobset-name``; ``jobset.sigs.k8s.io/global-replicas`` (or, older,
  ``replicatedjob-replicas``) Jobs — one pod each unless the Job runs more (say so with the knob below).
- LeaderWorkerSet: ``leaderworkerset.sigs.k8s.io/name`` + ``group-index``; ``leaderworkerset.sigs.k8s.io/size``.
- Kubeflow training (PyTorchJob, MPIJob, …): ``training.kubeflow.org/job-name``.
- Coscheduling (scheduler-plugins): ``scheduling.x-k8s.io/pod-group``; KAI: ``pod-group-name``;
  Volcano: ``scheduling.k8s.io/group-name``.

The group's size is in its owner's spec, which a pod does not carry for every controller; the knob
``gpu-advisor.io/group-size`` says it where the labels do not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extender.errors import InputError

__all__ = ["ANNOTATION_GROUP_SIZE", "PodGroup", "group_size_knob", "pod_group"]

ANNOTATION_GROUP_SIZE = "gpu-advisor.io/group-size"
_JOBSET = "jobset.sigs.k8s.io/"
_LWS = "leaderworkerset.sigs.k8s.io/"

# (kind, the key naming the group, the key that may give its size), checked in this order.
_MARKS: tuple[tuple[str, str, str | None], ...] = (
    ("JobSet", _JOBSET + "jobset-name", None),
    ("LeaderWorkerSet", _LWS + "name", _LWS + "size"),
    ("Kubeflow job", "training.kubeflow.org/job-name", None),
    ("PodGroup", "scheduling.x-k8s.io/pod-group", None),
    ("PodGroup", "pod-group.scheduling.sigs.k8s.io", None),
    ("PodGroup", "pod-group-name", None),
    ("PodGroup", "scheduling.k8s.io/group-name", None),
)


@dataclass(frozen=True)
class PodGroup:
    kind: str  # "JobSet", "LeaderWorkerSet", "Kubeflow job", "PodGroup"
    key: str  # namespace/name (LeaderWorkerSet: namespace/name/group index): the same for every member
    size: int | None  # pods in the group; None when nothing on the pod says

    @property
    def name(self) -> str:
        return self.key.split("/", 1)[1]


def group_size_knob(value: Any) -> int | None:
    """The ``gpu-advisor.io/group-size`` knob: a whole number of pods, at least 1."""
    if value in (None, ""):
        return None
    text = str(value).strip()
    if not text.isdigit() or not 1 <= int(text) <= 100_000:
        raise InputError(f"annotation {ANNOTATION_GROUP_SIZE}: {text[:40]!r} is not a pod count from 1 to 100000")
    return int(text)


def pod_group(meta: Any) -> PodGroup | None:
    """The group a pod (its ``metadata``) belongs to; None for a pod of no known group."""
    if not isinstance(meta, Mapping):
        return None
    marks = {**_strings(meta.get("annotations")), **_strings(meta.get("labels"))}
    namespace = str(meta.get("namespace") or "default")
    for kind, name_key, size_key in _MARKS:
        name = marks.get(name_key)
        if not name:
            continue
        if kind == "LeaderWorkerSet":
            name = f"{name}/{marks.get(_LWS + 'group-index', '0')}"  # each replica of an LWS is one group
        knob = _strings(meta.get("annotations")).get(ANNOTATION_GROUP_SIZE)  # a knob is an annotation only
        size = group_size_knob(knob) or _size(marks, kind, size_key)
        return PodGroup(kind, f"{namespace}/{name}", size)
    return None


def _size(marks: Mapping[str, str], kind: str, size_key: str | None) -> int | None:
    keys = (_JOBSET + "global-replicas", _JOBSET + "replicatedjob-replicas") if kind == "JobSet" else (size_key,)
    for key in keys:
        text = marks.get(key) if key else None
        if text and text.isdigit() and int(text) >= 1:
            return int(text)
    return None


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}
