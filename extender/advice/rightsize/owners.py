"""Which workload a GPU pod belongs to: the owner people scale, not the ReplicaSet or Job in between.

From a Pod object: its controller ``ownerReferences`` entry, lifted one level where Kubernetes puts a
controller in between — ReplicaSet → Deployment (the ReplicaSet is ``<deployment>-<pod-template-hash>``),
Job → CronJob (a CronJob names its Jobs ``<cronjob>-<minutes since epoch>``) — and the labels of
LeaderWorkerSet and JobSet, whose pods are owned by a StatefulSet or Job those create. A pod with no
owner is its own workload.

A pod that no longer exists (a finished Job's, a replaced replica's) is known only by the name its DCGM
series carry; a name shaped ``<name>-<replicaset hash>-<5 chars>`` is taken for a Deployment's pod.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from extender.model.pods import ANNOTATION_LATENCY_SENSITIVE

__all__ = ["Owner", "PodFacts", "owner_of_name", "owner_of_pod", "pod_facts"]

# The alphabet Kubernetes uses for generated name suffixes (no vowels, no look-alikes).
_SAFE = "[bcdfghjklmnpqrstvwxz2456789]"
_DEPLOYMENT_POD = re.compile(rf"^(.+)-{_SAFE}{{6,10}}-{_SAFE}{{5}}$")
_CRONJOB_JOB = re.compile(r"^(.+)-\d{8,}$")
_LABEL_OWNERS = (
    ("leaderworkerset.sigs.k8s.io/name", "LeaderWorkerSet"),
    ("jobset.sigs.k8s.io/jobset-name", "JobSet"),
)


@dataclass(frozen=True, order=True)
class Owner:
    namespace: str
    kind: str  # Deployment, StatefulSet, Job, CronJob, LeaderWorkerSet, JobSet, ReplicaSet, Pod, …
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.kind}/{self.name}"


def _controller(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    refs = [r for r in meta.get("ownerReferences") or [] if isinstance(r, Mapping)]
    return next((r for r in refs if r.get("controller")), refs[0] if refs else None)


def owner_of_pod(pod: Mapping[str, Any]) -> Owner:
    """The workload a Pod object belongs to (itself when it has no owner)."""
    meta = pod.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
    labels = meta.get("labels") or {}
    for label, kind in _LABEL_OWNERS:
        if labels.get(label):
            return Owner(namespace, kind, str(labels[label]))
    ref = _controller(meta)
    if ref is None:
        return owner_of_name(namespace, name)
    kind, owner = str(ref.get("kind") or "Pod"), str(ref.get("name") or name)
    template_hash = str(labels.get("pod-template-hash") or "")
    if kind == "ReplicaSet" and template_hash and owner.endswith(f"-{template_hash}"):
        return Owner(namespace, "Deployment", owner[: -len(template_hash) - 1])
    if kind == "Job" and (m := _CRONJOB_JOB.match(owner)):
        return Owner(namespace, "CronJob", m.group(1))
    return Owner(namespace, kind, owner)


def owner_of_name(namespace: str, name: str) -> Owner:
    """The workload of a pod known only by name: a Deployment's when the name has its shape, else the pod."""
    m = _DEPLOYMENT_POD.match(name)
    return Owner(namespace, "Deployment", m.group(1)) if m else Owner(namespace, "Pod", name)


@dataclass(frozen=True)
class PodFacts:
    """What the cluster's Pod objects tell right-sizing: each pod's owner and latency-sensitive mark."""

    owners: Mapping[str, Owner]  # "namespace/name" → owner
    latency_sensitive: Mapping[str, bool]

    def owner_of(self, pod_key: str) -> Owner:
        """The pod's owner; a pod gone from the cluster is judged by its name."""
        known = self.owners.get(pod_key)
        if known is not None:
            return known
        namespace, _, name = pod_key.partition("/")
        return owner_of_name(namespace, name)


def pod_facts(pods: Iterable[Mapping[str, Any]]) -> PodFacts:
    owners, marks = {}, {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
        owners[key] = owner_of_pod(pod)
        mark = str((meta.get("annotations") or {}).get(ANNOTATION_LATENCY_SENSITIVE, "")).strip().lower()
        marks[key] = mark in ("true", "1", "yes")
    return PodFacts(owners, marks)
