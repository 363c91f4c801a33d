"""What one pod's GPU resource asks are worth, in GPUs.

A resource name as the pod spec writes it (``nvidia.com/mig-3g.40gb``) or as kube-state-metrics
exports it (``nvidia_com_mig_3g_40gb``) becomes a :class:`GpuAsk`: its sharing mode, MIG profile and
GPU-equivalents per unit:

- ``nvidia.com/gpu``, ``amd.com/gpu``: a whole GPU (1);
- ``nvidia.com/mig-<g>g.<m>gb``: a MIG instance, ``g`` slices of its GPU's 7 (4 on an A30, whose
  profiles the table in ``extender.model.mig_profiles`` names), e.g. 3g.40gb = 3/7;
- ``nvidia.com/gpu`` on a node whose device plugin shares each GPU ``R`` ways
  (``nvidia.com/gpu.replicas``), and ``nvidia.com/gpu.shared``: one share, 1/R of a GPU, counted as
  time-slicing or MPS by the node's ``nvidia.com/gpu.sharing-strategy``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from extender.model.mig_profiles import MIG_PRODUCTS

__all__ = ["MODES", "GpuAsk", "gpu_ask"]

MODES = ("whole", "mig", "time-slicing", "mps")
_MIG = re.compile(r"^nvidia[._]com[/_]mig[-_](\d+)g[._](\d+)gb$")
_WHOLE = {"nvidia.com/gpu", "nvidia_com_gpu", "amd.com/gpu", "amd_com_gpu"}
_SHARED = {"nvidia.com/gpu.shared", "nvidia_com_gpu_shared"}


@dataclass(frozen=True)
class GpuAsk:
    resource: str
    count: float
    mode: str  # one of MODES
    profile: str | None  # the MIG profile, e.g. "3g.40gb"
    gpu_share: float  # GPU-equivalents per unit

    @property
    def gpus(self) -> float:
        return self.count * self.gpu_share


def _slices_per_gpu(profile: str) -> int:
    """7, or the most slices a product offering ``profile`` has (4 for the A30's)."""
    for product in MIG_PRODUCTS:
        if any(p.name == profile for p in product.profiles):
            return max(p.slices for p in product.profiles)
    return 7


def gpu_ask(resource: str, count: float, replicas: int = 1, strategy: str | None = None) -> GpuAsk | None:
    """The ask of ``count`` units of ``resource`` on a node sharing each GPU ``replicas`` ways; None
    for a resource that is not a GPU."""
    name = resource.strip().lower()
    if m := _MIG.match(name):
        profile = f"{m.group(1)}g.{m.group(2)}gb"
        return GpuAsk(resource, count, "mig", profile, int(m.group(1)) / _slices_per_gpu(profile))
    shared = name in _SHARED or (name in _WHOLE and name.startswith("nvidia") and replicas > 1)
    if shared:
        mode = "mps" if (strategy or "").lower() == "mps" else "time-slicing"
        return GpuAsk(resource, count, mode, None, 1 / max(1, replicas))
    if name in _WHOLE:
        return GpuAsk(resource, count, "whole", None, 1.0)
    return None
