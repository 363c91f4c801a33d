"""Per-tenant GPU accounting: who held which GPUs (whole, MIG slices, time-sliced and MPS shares) over
a window, and how much of that they used.

Pure: the pods' allocations and DCGM statistics come in (``extender.sources.usage_history`` reads them
from Prometheus), the tenants' figures go out. Nothing leaves the cluster.
"""

from extender.advice.usage.asks import MODES, GpuAsk, gpu_ask
from extender.advice.usage.pods import DeviceUse, PodUsage, with_dcgm_use
from extender.advice.usage.source import UsageSource
from extender.advice.usage.table import usage_csv, usage_table
from extender.advice.usage.tenants import TenantUsage, UsageReport, tenant_key, usage_report

__all__ = [
    "MODES",
    "DeviceUse",
    "GpuAsk",
    "PodUsage",
    "TenantUsage",
    "UsageReport",
    "UsageSource",
    "gpu_ask",
    "tenant_key",
    "usage_csv",
    "usage_report",
    "usage_table",
    "with_dcgm_use",
]
