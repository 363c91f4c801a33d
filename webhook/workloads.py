"""The pod template inside an admitted object: a Pod itself, or what a controller will create.

Warnings on Pods that a controller creates reach nobody (the controller, not the person, made them),
so Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and CronJobs are judged by their template.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["WORKLOAD_KINDS", "pod_template"]

WORKLOAD_KINDS = ("Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob")


def pod_template(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """{"metadata", "spec"} of the pods this object is or makes; None for other kinds."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return {"metadata": obj.get("metadata") or {}, "spec": spec}
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        template = spec.get("template")
    elif kind == "CronJob":
        template = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template")
    else:
        return None
    if not isinstance(template, Mapping):
        return None
    # Knobs written on the controller count for its pods; the template's own annotations win.
    meta = dict(template.get("metadata") or {})
    outer = (obj.get("metadata") or {}).get("annotations") or {}
    meta["annotations"] = {
        **{k: v for k, v in outer.items() if str(k).startswith("gpu-advisor.io/")},
        **(meta.get("annotations") or {}),
    }
    return {"metadata": meta, "spec": template.get("spec") or {}}
