"""AMD Device Metrics Exporter series (ROCm/device-metrics-exporter), read like DCGM exporter fields.

=====================  ================================================================================
``gpu_gfx_activity``   graphics-engine activity, % of the sample period: AMD's counterpart of
                       ``DCGM_FI_DEV_GPU_UTIL``, so it ranks after DCGM's profiling fields.
``gpu_used_vram``      VRAM in use, MB as amd-smi counts them (2^20 bytes), read like ``DCGM_FI_DEV_FB_USED``.
``gpu_free_vram``      VRAM free, read like ``DCGM_FI_DEV_FB_FREE``; used + free is the GPU's VRAM.
=====================  ================================================================================

The exporter names the GPU by ``gpu_id`` (amd-smi's index) and ``gpu_uuid``, the node by ``hostname``,
and the pod holding it by ``pod``/``namespace``; ``series_map`` reads those as it reads DCGM's labels.
"""

from __future__ import annotations

__all__ = ["AMD_FIELDS", "AMD_SM_FIELD"]

# kind (as ``dcgm.FIELDS`` names them) → the exporter's series names.
AMD_FIELDS: dict[str, tuple[str, ...]] = {
    "gfx_activity": ("gpu_gfx_activity",),
    "fb_used": ("gpu_used_vram",),
    "fb_free": ("gpu_free_vram",),
}
# (kind, factor to percent, the name a reason shows), as ``dcgm.SM_FIELDS``.
AMD_SM_FIELD = ("gfx_activity", 1.0, "gpu_gfx_activity")
