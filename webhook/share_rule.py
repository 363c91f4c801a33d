"""Admission advice for shared GPUs: a share that no GPU of the cluster can ever hold.

A share asks a GPU model (Alibaba ``alibabacloud.com/gpu-card-model``, HAMi ``nvidia.com/use-gputype``),
a slice of a GPU (milli, or MiB that only a GPU that large can hold) and a number of GPUs; nodes offer
sharing in one convention each. When no node the pod may use offers that model with that much room, the
pod would wait forever: warn, naming what the cluster has.
"""

from __future__ import annotations

from extender.cluster.shares import request_milli
from extender.model.gpu_share import MILLI_PER_GPU
from webhook.workload import GB_PER_MIB, ClusterView, Finding, Workload

__all__ = ["gpu_share_never_fits"]


def _field_name(source: str) -> str:
    """``metadata.annotations["alibabacloud.com/gpu-milli"]`` → ``alibabacloud.com/gpu-milli``."""
    return source.rsplit("[", 1)[-1].strip('[]"')


def gpu_share_never_fits(w: Workload, view: ClusterView) -> list[Finding]:
    """A shared request no GPU model of the cluster can hold (model not allowed, share too big, too few GPUs)."""
    share, k = w.request.share, w.request.gpus
    if share is None:
        return []
    offered: dict[str, bool] = {}  # "model [size]" → can one of them hold it
    for n in view.eligible(w):
        gpus = n.shares
        if gpus is None or gpus.problem or gpus.convention != share.convention:
            continue
        memory = gpus.memory_mib[0] if gpus.memory_mib else None
        fits = share.allows(n.gpu_model or "") and request_milli(share, memory) <= MILLI_PER_GPU and len(gpus.free) >= k
        name = f"{n.gpu_model or 'unknown'}" + (f" {(memory or 0) * GB_PER_MIB:.0f} GB" if memory else "")
        offered[name] = offered.get(name, False) or fits
    if any(offered.values()):
        return []
    where = ", ".join(sorted(offered)) if offered else "no node it may use offers GPU sharing"
    return [
        Finding(
            "gpu-share-never-fits",
            "warning",
            f"{w.request.describe()} ({_field_name(share.source)}) fits no GPU here: {where}",
            "ask a share and GPU model the cluster has (or check nodeSelector and tolerations)",
        )
    ]
