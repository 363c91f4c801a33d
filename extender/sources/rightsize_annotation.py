"""Writing each workload's right-sizing advice to its owner as the ``gpu-advisor.io/rightsize``
annotation (``gpu-advisor rightsize --annotate``): one merge patch per owner, nothing else changed.

RBAC: ``patch`` on the workload kinds only (deployments, statefulsets, replicasets in ``apps``; jobs,
cronjobs in ``batch``; leaderworkersets, jobsets; pods for bare pods). No read of anything new.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from extender.advice.rightsize import Advice, Owner

__all__ = ["ANNOTATION_RIGHTSIZE", "annotate_owners", "annotation_value"]

ANNOTATION_RIGHTSIZE = "gpu-advisor.io/rightsize"
# (group, version, plural) of the custom workload kinds.
_CUSTOM = {
    "LeaderWorkerSet": ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets"),
    "JobSet": ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
}


def annotation_value(advice: Advice) -> str:
    """The annotation's JSON: the advice and the figures it rests on, small enough for an annotation."""
    u = advice.usage
    return json.dumps(
        {
            "advice": advice.summary,
            "action": advice.action,
            "gpus_freed": round(advice.gpus_freed, 2),
            "confidence": advice.confidence,
            "hours_observed": round(u.hours_observed, 1),
            "gpu_hours_idle": round(u.gpu_hours_idle, 1),
            "sm_p95": round(u.sm_p95, 1),
            "vram_peak_mib": None if u.vram_peak_mib is None else round(u.vram_peak_mib),
        },
        separators=(",", ":"),
    )


def _patcher(core: Any, owner: Owner) -> Callable[[dict[str, Any]], Any] | None:
    from kubernetes import client

    api = core.api_client
    ns, name = owner.namespace, owner.name
    apps = {"Deployment": "deployment", "StatefulSet": "stateful_set", "ReplicaSet": "replica_set"}
    batch = {"Job": "job", "CronJob": "cron_job"}
    if owner.kind in apps:
        method = getattr(client.AppsV1Api(api), f"patch_namespaced_{apps[owner.kind]}")
    elif owner.kind in batch:
        method = getattr(client.BatchV1Api(api), f"patch_namespaced_{batch[owner.kind]}")
    elif owner.kind == "Pod":
        method = core.patch_namespaced_pod
    elif owner.kind in _CUSTOM:
        group, version, plural = _CUSTOM[owner.kind]
        custom = client.CustomObjectsApi(api)
        return lambda body: custom.patch_namespaced_custom_object(group, version, ns, plural, name, body)
    else:
        return None
    return lambda body: method(name, ns, body)


def annotate_owners(core: Any, advice: Sequence[Advice]) -> list[tuple[Owner, str]]:
    """Patch every owner's annotation; returns the owners that could not be patched, with why."""
    from extender.sources.kube import api_error_message

    failed = []
    for a in advice:
        patch = _patcher(core, a.usage.owner)
        if patch is None:
            failed.append((a.usage.owner, f"no patch for kind {a.usage.owner.kind}"))
            continue
        try:
            patch({"metadata": {"annotations": {ANNOTATION_RIGHTSIZE: annotation_value(a)}}})
        except Exception as exc:  # the client raises many kinds; the user needs the one line
            failed.append((a.usage.owner, api_error_message(exc)))
    return failed
