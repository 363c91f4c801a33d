"""What DCGM exporter fields mean for one GPU: how busy its SMs are, and how much of its memory is used.

=================  ==============================================================================
SM activity (%)    ``DCGM_FI_PROF_SM_ACTIVE`` (ratio): the share of time SMs have work, the truth where
                   profiling metrics are exported; else ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (ratio; also
                   what MIG instances export); else ``DCGM_FI_DEV_GPU_UTIL`` (%), a coarse "some kernel
                   ran in the sample period" flag. A reading says which one it used.
VRAM used (MiB)    ``DCGM_FI_DEV_FB_USED`` + ``DCGM_FI_DEV_FB_RESERVED`` (where exported: the driver's
                   share, unusable by pods).
VRAM total (MiB)   ``FB_USED + FB_FREE (+ FB_RESERVED)``.
=================  ==============================================================================

Each field also has the 1.x / old-namespace spelling some exporters still emit. AMD's device metrics
exporter series are read the same way (``amd_metrics``): graphics activity last among the SM fields.
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.model.amd_metrics import AMD_FIELDS, AMD_SM_FIELD
from extender.model.readings import GpuReading

__all__ = ["FIELDS", "SM_FIELDS", "field_of", "reading_from_fields"]

FIELDS: dict[str, tuple[str, ...]] = {
    "sm_active": ("DCGM_FI_PROF_SM_ACTIVE", "dcgm_fi_prof_sm_active"),
    "gr_engine": ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "dcgm_fi_prof_gr_engine_active"),
    "gpu_util": ("DCGM_FI_DEV_GPU_UTIL", "dcgm_gpu_utilization"),
    "fb_used": ("DCGM_FI_DEV_FB_USED", "dcgm_fb_used"),
    "fb_free": ("DCGM_FI_DEV_FB_FREE", "dcgm_fb_free"),
    "fb_reserved": ("DCGM_FI_DEV_FB_RESERVED", "dcgm_fb_reserved"),
}
for _kind, _names in AMD_FIELDS.items():
    FIELDS[_kind] = FIELDS.get(_kind, ()) + _names
# Best first: (field, factor to percent, the name a reason shows).
SM_FIELDS: tuple[tuple[str, float, str], ...] = (
    ("sm_active", 100.0, "DCGM_FI_PROF_SM_ACTIVE"),
    ("gr_engine", 100.0, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
    ("gpu_util", 1.0, "DCGM_FI_DEV_GPU_UTIL"),
    AMD_SM_FIELD,
)
_BY_NAME = {name: kind for kind, names in FIELDS.items() for name in names}


def field_of(metric: str) -> str | None:
    """``DCGM_FI_DEV_FB_USED`` → ``fb_used``; None for fields the advisor does not read."""
    return _BY_NAME.get(metric)


def reading_from_fields(
    values: Mapping[str, float],
    at: float | None,
    ended: bool = False,
    pod: str | None = None,
    mig: str | None = None,
) -> GpuReading:
    """One GPU's field values (by field kind; SM fields as exported, ratio or %) → a reading."""
    sm, source = None, None
    for kind, factor, name in SM_FIELDS:
        if kind in values:
            sm, source = values[kind] * factor, name
            break
    used, free = values.get("fb_used"), values.get("fb_free")
    reserved = values.get("fb_reserved", 0.0)
    if used is not None:
        used += reserved
    return GpuReading(
        sm_util=sm,
        memory_used_mib=used,
        memory_free_mib=free,
        at=at,
        pod=pod,
        sm_source=source,
        ended=ended,
        mig=mig,
    )
