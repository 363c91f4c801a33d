"""The pending view: every pending GPU pod with its diagnosis (allocation → memory → placement →
hold → application, the first step that blocks is the answer) and the per-node reasons the extender
gives kube-scheduler for it, the reserve's holds included (with until when, ``held_until``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.advice.diagnose import diagnose
from extender.cluster.dra_view import pod_through_claims
from extender.http.advisor import Advisor
from extender.model.pods import PodSpecError, pod_request
from extender.scoring.hold_clock import until_text

__all__ = ["pending_view"]


def _is_pending_gpu_pod(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return False
    try:
        return pod_request(pod).wants_gpu
    except PodSpecError:
        return True  # a GPU ask that cannot be read is worth showing: diagnose names the problem


def _one(advisor: Advisor, pod: Mapping[str, Any], now: float) -> dict[str, Any]:
    nodes, mix, policy = advisor.state.nodes_by_name(), advisor.learner.current, advisor.policy
    try:
        request = pod_request(pod)
        found = diagnose(pod, nodes, advisor.telemetry, policy, now, mix, advisor.holding).to_dict()
    except PodSpecError as exc:
        meta = pod.get("metadata") or {}
        return {"pod": f"{meta.get('namespace', 'default')}/{meta.get('name', '')}", "problem": str(exc)}
    verdicts = advisor.judge_apart(request, sorted(nodes), nodes, now=now)
    held = advisor.holding(request, pod)
    after = held.apply(request, verdicts, nodes)[0] if held is not None else verdicts
    found["node_reasons"] = [new.to_dict() for new in after]
    if held is not None:  # the held nodes, and until when at the latest
        for entry, new, old in zip(found["node_reasons"], after, verdicts, strict=True):
            entry["held_until"] = until_text(held.until) if old.fits and not new.fits else None
    return found


def pending_view(advisor: Advisor) -> dict[str, Any]:
    source = advisor.pod_objects
    if source is None:
        return {"listed": False, "pods": [], "note": "this server's cluster source does not list pending pods"}
    now = advisor.clock()
    dra = advisor.state.dra  # GPUs asked through DRA claims, counted as explain counts them
    pods = [p for p in (pod_through_claims(p, dra) for p in source()) if _is_pending_gpu_pod(p)]
    return {"listed": True, "pods": [_one(advisor, p, now) for p in pods], "note": None}
