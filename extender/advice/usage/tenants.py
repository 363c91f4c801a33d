"""Per-tenant GPU accounting: the pods' allocations summed by namespace, by a label, or by workload.

Per tenant: allocated GPU-hours (GPU-equivalents: a MIG 3g slice is 3/7, a 1-in-4 time-sliced share
1/4) split by product, by sharing mode and by MIG profile (instance-hours, slice-hours and
GPU-equivalent hours); used and idle GPU-hours over the pods DCGM meters, and the allocated hours of
those pods (so "idle" is read against what was metered); the VRAM peak; and the top workloads behind
the allocation.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from extender.advice.usage.asks import MODES
from extender.advice.usage.pods import PodUsage

__all__ = ["TenantUsage", "UsageReport", "tenant_key", "usage_report"]

TOP = 3
UNLABELLED = "(none)"


def tenant_key(by: str) -> Callable[[PodUsage], str]:
    """``namespace``, ``workload`` or ``label:KEY`` → the tenant of a pod; anything else a ValueError."""
    if by == "namespace":
        return lambda p: p.namespace
    if by == "workload":
        return lambda p: str(p.owner)
    if by.startswith("label:") and by[6:].strip():
        key = by[6:].strip()
        # kube-state-metrics writes label keys with "_" for what Prometheus names cannot hold.
        exported = re.sub(r"[^A-Za-z0-9_]", "_", key)
        return lambda p: p.labels.get(key) or p.labels.get(exported) or UNLABELLED
    raise ValueError(f"{by!r} is not a tenant: give namespace, workload or label:KEY (e.g. label:team)")


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


@dataclass(frozen=True)
class TenantUsage:
    tenant: str
    pods: tuple[PodUsage, ...]

    @property
    def allocated_gpu_hours(self) -> float:
        return sum(p.allocated_gpu_hours for p in self.pods)

    @property
    def metered(self) -> tuple[PodUsage, ...]:
        return tuple(p for p in self.pods if p.used_gpu_hours is not None)

    @property
    def used_gpu_hours(self) -> float | None:
        return sum(p.used_gpu_hours or 0.0 for p in self.metered) if self.metered else None

    @property
    def idle_gpu_hours(self) -> float | None:
        return sum(p.idle_gpu_hours or 0.0 for p in self.metered) if self.metered else None

    def split(self, part: Callable[[PodUsage, Any], str | None]) -> dict[str, float]:
        """Allocated GPU-hours by ``part(pod, ask)`` (asks whose part is None left out)."""
        out: dict[str, float] = defaultdict(float)
        for pod in self.pods:
            for ask in pod.asks:
                name = part(pod, ask)
                if name is not None:
                    out[name] += ask.gpus * pod.running_hours
        return dict(out)

    def mig(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for pod in self.pods:
            for ask in (a for a in pod.asks if a.profile):
                row = out.setdefault(str(ask.profile), {"instance_hours": 0.0, "slice_hours": 0.0, "gpu_hours": 0.0})
                row["instance_hours"] += ask.count * pod.running_hours
                row["slice_hours"] += ask.count * pod.running_hours * int(str(ask.profile).split("g.", 1)[0])
                row["gpu_hours"] += ask.gpus * pod.running_hours
        return out

    def top_workloads(self) -> list[dict[str, Any]]:
        owners: dict[str, list[PodUsage]] = defaultdict(list)
        for pod in self.pods:
            owners[str(pod.owner)].append(pod)
        rows = [TenantUsage(name, tuple(pods)) for name, pods in owners.items()]
        rows.sort(key=lambda t: (-t.allocated_gpu_hours, t.tenant))
        return [
            {
                "workload": t.tenant,
                "allocated_gpu_hours": _r(t.allocated_gpu_hours),
                "used_gpu_hours": _r(t.used_gpu_hours),
                "idle_gpu_hours": _r(t.idle_gpu_hours),
            }
            for t in rows[:TOP]
        ]

    def to_dict(self) -> dict[str, Any]:
        by_mode = self.split(lambda _, ask: str(ask.mode))
        peaks = [p.vram_peak_mib for p in self.pods if p.vram_peak_mib is not None]
        return {
            "tenant": self.tenant,
            "pods": len(self.pods),
            "allocated_gpu_hours": _r(self.allocated_gpu_hours),
            "used_gpu_hours": _r(self.used_gpu_hours),
            "idle_gpu_hours": _r(self.idle_gpu_hours),
            "metered_gpu_hours": _r(sum(p.allocated_gpu_hours for p in self.metered)),
            "vram_peak_mib": _r(max(peaks, default=None)),
            "by_product": {k: _r(v) for k, v in sorted(self.split(lambda p, _: p.product or "unknown").items())},
            "by_mode": {mode: _r(by_mode.get(mode, 0.0)) for mode in MODES},
            "mig": {k: {n: _r(v) for n, v in row.items()} for k, row in sorted(self.mig().items())},
            "top_workloads": self.top_workloads(),
        }


@dataclass(frozen=True)
class UsageReport:
    by: str
    window_hours: float
    source: str
    tenants: tuple[TenantUsage, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "by": self.by,
            "window_hours": self.window_hours,
            "source": self.source,
            "totals": {
                "tenants": len(self.tenants),
                "allocated_gpu_hours": _r(sum(t.allocated_gpu_hours for t in self.tenants)),
                "used_gpu_hours": _r(sum(t.used_gpu_hours or 0.0 for t in self.tenants)),
                "idle_gpu_hours": _r(sum(t.idle_gpu_hours or 0.0 for t in self.tenants)),
            },
            "tenants": [t.to_dict() for t in self.tenants],
        }


def usage_report(pods: Iterable[PodUsage], by: str, window_hours: float, source: str) -> UsageReport:
    """The tenants of ``pods`` grouped ``by`` (see :func:`tenant_key`), most allocated GPU-hours first."""
    key = tenant_key(by)
    grouped: dict[str, list[PodUsage]] = defaultdict(list)
    for pod in pods:
        if pod.allocated_gpu_hours > 0:
            grouped[key(pod)].append(pod)
    tenants = [TenantUsage(name, tuple(group)) for name, group in grouped.items()]
    tenants.sort(key=lambda t: (-t.allocated_gpu_hours, t.tenant))
    return UsageReport(by, window_hours, source, tuple(tenants))
