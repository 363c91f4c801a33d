"""The usage report as a text table and as CSV, most allocated GPU-hours first."""

from __future__ import annotations

import csv
import io

from extender.advice.usage.tenants import UsageReport

__all__ = ["usage_csv", "usage_table"]

_HEAD = ("TENANT", "PODS", "ALLOC GPU-h", "USED GPU-h", "IDLE GPU-h", "WHOLE", "MIG", "SHARED", "TOP WORKLOAD")


_CSV_HEAD = (
    *("tenant", "pods", "allocated_gpu_hours", "used_gpu_hours", "idle_gpu_hours", "whole_gpu_hours"),
    *("mig_gpu_hours", "time_slicing_gpu_hours", "mps_gpu_hours", "top_workload"),
)


def _h(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _rows(report: UsageReport) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for t in report.tenants:
        doc = t.to_dict()
        modes = doc["by_mode"]
        top = doc["top_workloads"][0]["workload"] if doc["top_workloads"] else "-"
        shared = modes["time-slicing"] + modes["mps"]
        hours = (t.allocated_gpu_hours, t.used_gpu_hours, t.idle_gpu_hours, modes["whole"], modes["mig"], shared)
        rows.append((t.tenant, str(len(t.pods)), *(_h(h) for h in hours), str(top)))
    return rows


def usage_table(report: UsageReport) -> str:
    rows = [_HEAD, *_rows(report)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEAD))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    totals = report.to_dict()["totals"]
    lines += [
        "",
        f"{len(report.tenants)} tenants by {report.by} over {report.window_hours:g} h ({report.source}): "
        f"{totals['allocated_gpu_hours']:.1f} GPU-hours allocated, {totals['used_gpu_hours']:.1f} used, "
        f"{totals['idle_gpu_hours']:.1f} idle where metered",
    ]
    return "\n".join(lines)


def usage_csv(report: UsageReport) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_CSV_HEAD)
    for t in report.tenants:
        doc = t.to_dict()
        top = doc["top_workloads"][0]["workload"] if doc["top_workloads"] else ""
        values = [doc["allocated_gpu_hours"], doc["used_gpu_hours"], doc["idle_gpu_hours"], *doc["by_mode"].values()]
        writer.writerow([t.tenant, len(t.pods), *("" if v is None else v for v in values), top])
    return out.getvalue()
