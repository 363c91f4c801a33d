"""The right-sizing report: every workload's advice, most GPU-hours wasted first, and the totals."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from extender.advice.rightsize.owners import Owner
from extender.advice.rightsize.recommend import Advice, RightsizePolicy, recommend
from extender.advice.rightsize.usage import GpuSeries, workloads

__all__ = ["RightsizeReport", "rightsize", "table"]


@dataclass(frozen=True)
class RightsizeReport:
    window_hours: float
    source: str
    advice: tuple[Advice, ...]

    @property
    def gpu_hours_held(self) -> float:
        return sum(a.usage.gpu_hours_held for a in self.advice)

    @property
    def gpu_hours_idle(self) -> float:
        return sum(a.usage.gpu_hours_idle for a in self.advice)

    @property
    def gpus_freed(self) -> float:
        return sum(a.gpus_freed for a in self.advice)

    def to_dict(self) -> dict[str, Any]:
        return {
            "window_hours": self.window_hours,
            "source": self.source,
            "totals": {
                "workloads": len(self.advice),
                "gpu_hours_held": round(self.gpu_hours_held, 3),
                "gpu_hours_idle": round(self.gpu_hours_idle, 3),
                "gpus_freed": round(self.gpus_freed, 3),
            },
            "workloads": [a.to_dict() for a in self.advice],
        }


def rightsize(
    series: Iterable[GpuSeries],
    owner_of: Callable[[str], Owner],
    window_hours: float,
    source: str,
    latency_sensitive: Mapping[str, bool] | None = None,
    namespace: str | None = None,
    min_gpus: float = 0.0,
    policy: RightsizePolicy | None = None,
) -> RightsizeReport:
    """Advice for every workload (of ``namespace``, holding at least ``min_gpus`` GPUs on average)."""
    found = workloads(series, owner_of, latency_sensitive)
    chosen = [u for u in found if (namespace is None or u.owner.namespace == namespace) and u.gpus_held >= min_gpus]
    advice = [recommend(u, window_hours, policy) for u in chosen]
    advice.sort(key=lambda a: (-a.usage.gpu_hours_idle, str(a.usage.owner)))
    return RightsizeReport(window_hours, source, tuple(advice))


def _gib(mib: float | None) -> str:
    return "-" if mib is None else f"{mib / 1024:.1f}"


def table(report: RightsizeReport) -> str:
    """The report as a text table, most idle GPU-hours first, then the totals."""
    head = ["WORKLOAD", "GPUS", "USED", "SM p50/p95/max %", "VRAM p95/peak GiB", "HOURS", "IDLE GPU-h", "ADVICE"]
    head += ["FREES", "CONF"]
    rows: list[tuple[str, ...]] = [tuple(head)]
    for a in report.advice:
        u = a.usage
        rows.append(
            (
                str(u.owner),
                f"{u.gpus_held:.1f}",
                f"{u.gpus_used:.2f}",
                f"{u.sm_p50:.0f}/{u.sm_p95:.0f}/{u.sm_max:.0f}",
                f"{_gib(u.vram_p95_mib)}/{_gib(u.vram_peak_mib)}",
                f"{u.hours_observed:.1f}",
                f"{u.gpu_hours_idle:.1f}",
                a.summary,
                f"{a.gpus_freed:.2f}",
                a.confidence,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.append("")
    lines.append(
        f"{len(report.advice)} workloads over {report.window_hours:g} h ({report.source}): "
        f"{report.gpu_hours_idle:.1f} of {report.gpu_hours_held:.1f} GPU-hours held idle; "
        f"the advice frees {report.gpus_freed:.2f} GPUs"
    )
    return "\n".join(lines)
