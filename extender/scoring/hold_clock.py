"""How long a pod has been held, read from what the API server holds: never from one process's memory.

A hold (``reserve``) is bounded by the policy's ``reserve_hold_limit_s``: past it the pod is judged as
if no reserve existed. The limit must count from the same moment in every replica and across restarts,
so the clock is the Pod object's own: kube-scheduler sends it in every filter call, and when it first
fails to place the pod it sets the condition ``PodScheduled`` to ``False`` with reason
``Unschedulable`` (``SchedulerError`` when the attempt itself failed, an extender unreachable). Its
``lastTransitionTime`` is kept while the status stays ``False`` (later failures change the reason and the
message, not the time), so it marks the first attempt that placed the pod nowhere, whichever reason the
last one gave.

The approximation: the clock starts at the first unschedulable attempt, whatever refused it then (a
pod that waited for a full cluster before the reserve began to hold it is released sooner, never
later). A pod without that condition (its first attempt) is held from now: its limit ends ``limit``
seconds ahead. A timestamp that cannot be read counts as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

__all__ = ["held_since", "hold_ends", "released", "until_text"]


def held_since(pod: Mapping[str, Any] | None) -> float | None:
    """When kube-scheduler first found no node for the pod (seconds since the epoch), if it has."""
    status = pod.get("status") if isinstance(pod, Mapping) else None
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for condition in conditions if isinstance(conditions, list) else ():
        if not isinstance(condition, Mapping) or condition.get("type") != "PodScheduled":
            continue
        if condition.get("status") != "False":  # any reason: Unschedulable, or SchedulerError while down
            return None
        return _epoch(condition.get("lastTransitionTime"))
    return None


def _epoch(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def hold_ends(pod: Mapping[str, Any] | None, now: float, limit_s: float) -> float:
    """When the pod's hold ends at the latest: ``limit_s`` after it was first unschedulable (from now
    when it has not been yet; a time ahead of ``now``, a skewed clock, counts as now)."""
    since = held_since(pod)
    return (now if since is None else min(since, now)) + limit_s


def released(pod: Mapping[str, Any] | None, now: float, limit_s: float) -> bool:
    """Whether the pod is past its hold limit: judged as if no reserve existed."""
    return now >= hold_ends(pod, now, limit_s)


def until_text(moment: float) -> str:
    """``2026-12-06T04:57:01Z``: how a hold's end is written for people and in JSON."""
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
