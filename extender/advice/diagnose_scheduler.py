"""diagnose's scheduler step: a pod asking a GPU share kube-scheduler cannot count (Alibaba annotations, HAMi
or Aliyun memory and cores: ``gpu_conventions``) on a scheduler that cannot count it either. Nothing checks
its share there: pending, it may wait for nothing the advisor can see; placed, its GPU may be over-committed.
The safety net refuses such pods at admission; this finds the ones admitted before it, or while it warned.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.model.gpu_conventions import (
    ADVISOR_PROFILE,
    CONVENTIONS,
    COUNTING_SCHEDULERS,
    asked_conventions,
    scheduler_of,
)

__all__ = ["scheduler_finding"]

_ADVISOR_ONLY = {c.name for c in CONVENTIONS if not c.counted_by_kube_scheduler}


def scheduler_finding(
    pod: Mapping[str, Any], counting: tuple[str, ...] = COUNTING_SCHEDULERS
) -> tuple[str, tuple[str, ...]] | None:
    """(finding, evidence) when the pod's scheduler cannot count its share; None when it can or there is none."""
    shares = [c for c in asked_conventions(pod) if c in _ADVISOR_ONLY]
    scheduler = scheduler_of(pod)
    # A pod read from the API server always names one (defaulted on create); one that names none is a
    # manifest not yet admitted, which routing will send to the advisor.
    named = isinstance(pod.get("spec"), Mapping) and "schedulerName" in pod["spec"]
    if not shares or not named or scheduler in counting:
        return None
    finding = (
        f"its scheduler {scheduler} cannot count its {' and '.join(shares)} GPU share, so nothing keeps its GPU"
        f" from being over-committed: set spec.schedulerName: {ADVISOR_PROFILE} (pods that name none are routed"
        " there unless the pod or its namespace is labelled gpu-advisor.io/routing=off)"
    )
    evidence = (f"spec.schedulerName: {scheduler}", f"schedulers that count it: {', '.join(counting)}")
    return finding, evidence
