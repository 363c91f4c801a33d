"""The free share (milli-GPU) of every GPU of a node that offers GPU sharing, from its bound pods.

A node offers sharing in the Alibaba, Aliyun or HAMi convention (``extender.model.gpu_share_node``); its
GPUs start at 1000 milli each (an unhealthy HAMi GPU at 0). Each bound pod then takes its share of the
GPUs its convention's assignment annotation names:

- Alibaba (open-gpu-share): ``alibabacloud.com/gpu-index``, indices joined by ``-`` (``"0"``, ``"2-3"``);
- Aliyun (gpushare-scheduler-extender): ``ALIYUN_COM_GPU_MEM_IDX``, one index;
- HAMi: ``hami.io/vgpu-devices-allocated``, per container ``;``, per device ``:``, fields
  ``uuid,type,memory MiB,cores`` — the uuid names the GPU.

Without an assignment (not bound yet, or an older writer) the pod's GPUs are predicted with the rule the
advisor itself judges by (:func:`take_gpus`), so the model and the advice never disagree about where a
pod went.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from extender.model.gpu_share import MILLI_PER_GPU, ShareRequest, milli_of
from extender.model.gpu_share_node import NodeShareError, SharedGpu, node_gpu_shares
from extender.model.pods import PodRequest

__all__ = [
    "ALIBABA_INDEX",
    "ALIYUN_INDEX",
    "HAMI_ALLOCATED",
    "GpuShares",
    "assignment",
    "choose_gpu",
    "gpu_shares",
    "request_milli",
    "take_gpus",
]

ALIBABA_INDEX = "alibabacloud.com/gpu-index"
ALIYUN_INDEX = "ALIYUN_COM_GPU_MEM_IDX"
HAMI_ALLOCATED = "hami.io/vgpu-devices-allocated"
_INDEX_SPLIT = re.compile(r"[-,\s]+")


@dataclass(frozen=True, slots=True)
class GpuShares:
    """A sharing node's GPUs: the convention, the model, per GPU its memory and its free milli."""

    convention: str
    model: str | None
    memory_mib: tuple[int | None, ...]
    free: tuple[int, ...]
    problem: str | None = None  # why the node's sharing fields could not be read (then it offers none)

    @property
    def free_total(self) -> int:
        return sum(self.free)

    @property
    def in_use(self) -> bool:
        return any(f < MILLI_PER_GPU for f in self.free)


def assignment(annotations: Mapping[str, Any]) -> tuple[str, ...]:
    """The GPUs (indices, or HAMi uuids) a bound pod's assignment annotation names; empty when none."""
    for key in (ALIBABA_INDEX, ALIYUN_INDEX):
        text = str(annotations.get(key) or "").strip()
        if text:
            return tuple(part for part in _INDEX_SPLIT.split(text) if part)
    text = str(annotations.get(HAMI_ALLOCATED) or "")
    devices = (d for container in text.split(";") for d in container.split(":") if d.strip())
    return tuple(dict.fromkeys(d.split(",")[0].strip() for d in devices))


def request_milli(share: ShareRequest | None, memory_mib: int | None) -> int:
    """Milli of each GPU a request takes on a GPU with ``memory_mib`` MiB (whole GPUs: 1000)."""
    if share is None:
        return MILLI_PER_GPU
    if share.milli is None and share.cores_percent != 100 and share.memory_mib is not None and not memory_mib:
        return MILLI_PER_GPU + 1  # a memory share on a GPU of unknown size: never promised
    return milli_of(share, memory_mib or 1)


def choose_gpu(free: tuple[int, ...], milli: int) -> int:
    """The GPU a share of ``milli`` goes on: the least free one that still fits, lowest index on ties
    (best fit, what the Alibaba and Aliyun schedulers do); -1 when none fits."""
    chosen = -1
    for index, room in enumerate(free):
        if room >= milli and (chosen < 0 or room < free[chosen]):
            chosen = index
    return chosen


def take_gpus(free: tuple[int, ...], milli: int, count: int) -> tuple[int, ...]:
    """The GPUs a pod asking ``milli`` of each of ``count`` GPUs takes: one share by :func:`choose_gpu`;
    otherwise the lowest-index GPUs with that much free (whole GPUs: the idle ones, in the device
    plugins' and the simulator's order). Fewer than ``count`` when the node cannot hold it."""
    if count == 1 and milli < MILLI_PER_GPU:
        gpu = choose_gpu(free, milli)
        return (gpu,) if gpu >= 0 else ()
    return tuple(i for i, room in enumerate(free) if room >= milli)[:count]


def _place(shares: GpuShares, request: PodRequest, assigned: tuple[str, ...], uuids: Mapping[str, int]) -> GpuShares:
    free = list(shares.free)
    indices = [uuids.get(a, int(a) if a.isdigit() else -1) for a in assigned]
    if not indices or not all(0 <= i < len(free) for i in indices):  # none, or naming GPUs it lacks: predict
        milli = request_milli(request.share, shares.memory_mib[0] if shares.memory_mib else None)
        indices = list(take_gpus(shares.free, milli, request.gpus))
    for i in indices:
        if 0 <= i < len(free):
            free[i] = max(0, free[i] - request_milli(request.share, shares.memory_mib[i]))
    return GpuShares(shares.convention, shares.model, shares.memory_mib, tuple(free))


def _first_convention(gpus: tuple[SharedGpu, ...]) -> tuple[SharedGpu, ...]:
    convention = gpus[0].convention
    return tuple(g for g in gpus if g.convention == convention)


def gpu_shares(node: Mapping[str, Any], pods: Iterable[tuple[PodRequest, tuple[str, ...]]]) -> GpuShares | None:
    """What each GPU of a sharing node has free after its bound pods (request, assignment), in bind order;
    None for a node that offers no sharing."""
    try:
        offered = node_gpu_shares(node)
    except NodeShareError as exc:
        return GpuShares("unreadable", None, (), (), problem=str(exc))
    if not offered:
        return None
    gpus = _first_convention(offered)
    models = {g.model for g in gpus if g.model}
    shares = GpuShares(
        gpus[0].convention,
        models.pop() if len(models) == 1 else None,
        tuple(g.memory_mib for g in gpus),
        tuple(MILLI_PER_GPU if g.healthy else 0 for g in gpus),
    )
    uuids = {g.uuid: n for n, g in enumerate(gpus) if g.uuid}
    for request, assigned in pods:
        if request.gpus and not request.mig:
            shares = _place(shares, request, assigned, uuids)
    return shares
