"""The pending view: every pending GPU pod with its diagnosis (allocation → memory → placement →
application, the first step that blocks is the answer) and the per-node reasons the extender gives
kube-scheduler for it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.advice.diagnose import diagnose
from extender.http.advisor import Advisor
from extender.model.pods import PodSpecError, pod_request
from extender.scoring import judge_all

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
    nodes = advisor.state.nodes_by_name()
    try:
        request = pod_request(pod)
        found = diagnose(pod, nodes, advisor.telemetry, advisor.policy, now).to_dict()
    except PodSpecError as exc:
        meta = pod.get("metadata") or {}
        return {"pod": f"{meta.get('namespace', 'default')}/{meta.get('name', '')}", "problem": str(exc)}
    placer = advisor.state.machines.placer
    verdicts = judge_all(request, sorted(nodes), nodes, advisor.telemetry, advisor.policy, now, placer=placer)
    found["node_reasons"] = [v.to_dict() for v in verdicts]
    return found


def pending_view(advisor: Advisor) -> dict[str, Any]:
    source = advisor.pod_objects
    if source is None:
        return {"listed": False, "pods": [], "note": "this server's cluster source does not list pending pods"}
    now = advisor.clock()
    pods = [p for p in source() if _is_pending_gpu_pod(p)]
    return {"listed": True, "pods": [_one(advisor, p, now) for p in pods], "note": None}
