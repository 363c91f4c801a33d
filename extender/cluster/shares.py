"""The free share (milli-GPU) of every GPU of a node that offers GPU sharing, from its bound pods.

A node offers sharing in the Alibaba, Aliyun or HAMi convention (``extender.model.gpu_share_node``); its
GPUs start at 1000 milli each (an unhealthy HAMi GPU at 0). Each bound pod then takes its share of the
GPUs its convention's binder recorded on the pod:

- Alibaba (FGD simulator ``hkust-adsl/kubernetes-scheduler-simulator``, ``pkg/type/open-gpu-share/utils/pod.go``
  UpdatePodDeviceAnnoSpec / GpuIdStrToIntList; the replay writes the same): ``alibabacloud.com/gpu-index``,
  decimal indices joined by ``-`` (``"0"``, ``"2-3"``);
- Aliyun (``AliyunContainerService/gpushare-scheduler-extender`` ``pkg/utils/const.go`` EnvResourceIndex,
  ``pkg/utils/pod.go`` PatchPodAnnotationSpec / GetGPUIDFromAnnotation): ``ALIYUN_COM_GPU_MEM_IDX``, one decimal
  index (the extender writes it at bind; ``ALIYUN_COM_GPU_MEM_ASSIGNED`` only says whether the device plugin
  has consumed it yet, so the index holds either way);
- HAMi (``Project-HAMi/HAMi`` ``pkg/device/devices.go`` EncodePodSingleDevice / EncodeContainerDevices /
  DecodeContainerDevices): ``hami.io/vgpu-devices-allocated`` (written at bind beside
  ``hami.io/vgpu-devices-to-allocate``, which the device plugin empties container by container, so it is read
  only when the first is missing): each container's devices ended by ``;``, each device ``uuid,type,usedmem
  MiB,usedcores`` ended by ``:`` — the uuid names the GPU (the node's ``hami.io/node-nvidia-register`` maps it).

Without a record (not bound yet, or a binder that writes none) the pod's GPUs are predicted with the rule the
advisor itself judges by (:func:`take_gpus`), so the model and the advice never disagree about where a pod
went. A record that cannot be read is predicted too, and :func:`read_assignment` says why (the source counts
the pod as invalid and logs it once); so is one naming a GPU the node does not have.

While it places pods the model also adds up, per GPU, the exact fraction of it they were given (milli / 1000,
MiB / the GPU's MiB, percent / 100, a whole GPU as 1) and HAMi's cores: a GPU holding more than all of it is
*over-committed* (``GpuShares.overcommitted``), what happens when pods bind without the sharing scheduler.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from extender.model.gpu_share import MILLI_PER_GPU, ShareRequest, milli_of
from extender.model.gpu_share_node import NodeShareError, SharedGpu, node_gpu_shares
from extender.model.pods import PodRequest

__all__ = [
    "ALIBABA_INDEX",
    "ALIYUN_INDEX",
    "HAMI_ALLOCATED",
    "HAMI_TO_ALLOCATE",
    "GpuShares",
    "assignment",
    "choose_gpu",
    "gpu_shares",
    "read_assignment",
    "request_milli",
    "share_of_gpu",
    "take_gpus",
]

ALIBABA_INDEX = "alibabacloud.com/gpu-index"
ALIYUN_INDEX = "ALIYUN_COM_GPU_MEM_IDX"
HAMI_ALLOCATED = "hami.io/vgpu-devices-allocated"
HAMI_TO_ALLOCATE = "hami.io/vgpu-devices-to-allocate"
_INDEX = re.compile(r"^[0-9]{1,6}$")  # strconv.Atoi's digits; no GPU index has more than a few
_NUMBER = re.compile(r"^[0-9]{1,10}$")  # an int32 field of a HAMi device
_MAX_RECORD = 64 * 1024  # a record longer than this is no binder's: read as unreadable, never split


@dataclass(frozen=True, slots=True)
class GpuShares:
    """A sharing node's GPUs: the convention, the model, per GPU its memory and its free milli."""

    convention: str
    model: str | None
    memory_mib: tuple[int | None, ...]
    free: tuple[int, ...]
    problem: str | None = None  # why the node's sharing fields could not be read (then it offers none)
    # GPUs whose bound pods hold more than all of it, with how much: (index, milli bound, cores % bound)
    overcommitted: tuple[tuple[int, int, int], ...] = ()

    @property
    def free_total(self) -> int:
        return sum(self.free)

    @property
    def in_use(self) -> bool:
        return any(f < MILLI_PER_GPU for f in self.free)


def read_assignment(annotations: Mapping[str, Any]) -> tuple[tuple[str, ...], str | None]:
    """(the GPUs, as indices or HAMi uuids, a bound pod's record names; why a present record cannot be read).

    Empty GPUs and no problem: no record. A problem: the record is there but not in its binder's format,
    so the pod's GPUs are predicted instead.
    """
    for key in (ALIBABA_INDEX, ALIYUN_INDEX):
        if key in annotations:
            text = str(annotations[key]).strip()
            parts = tuple(text.split("-")) if key == ALIBABA_INDEX else (text,)
            if len(text) <= _MAX_RECORD and all(_INDEX.match(p) for p in parts):
                return tuple(dict.fromkeys(parts)), None
            what = "GPU indices joined by '-'" if key == ALIBABA_INDEX else "one GPU index"
            return (), f"annotation {key} {text[:40]!r} is not {what}"
    for key in (HAMI_ALLOCATED, HAMI_TO_ALLOCATE):
        text = str(annotations.get(key) or "")
        if text.strip(" ;:"):
            return _hami_devices(key, text)
    return (), None


def _hami_devices(key: str, text: str) -> tuple[tuple[str, ...], str | None]:
    """uuids of ``uuid,type,usedmem,usedcores:`` devices in ``;``-ended containers (DecodeContainerDevices)."""
    uuids: list[str] = []
    devices = [] if len(text) > _MAX_RECORD else [d for c in text.split(";") for d in c.split(":") if d.strip()]
    for device in devices:
        fields = [f.strip() for f in device.split(",")]
        if len(fields) < 4 or not fields[0] or not all(_NUMBER.match(f) for f in fields[2:4]):
            return (), f"annotation {key}: device {device[:60]!r} is not uuid,type,usedmem,usedcores"
        uuids.append(fields[0])
    if not uuids:
        return (), f"annotation {key}: {text[:40]!r} names no device"
    return tuple(dict.fromkeys(uuids)), None


def assignment(annotations: Mapping[str, Any]) -> tuple[str, ...]:
    """The GPUs (indices, or HAMi uuids) a bound pod's record names; empty when none or unreadable."""
    return read_assignment(annotations)[0]


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


def share_of_gpu(share: ShareRequest | None, memory_mib: int | None) -> int | Fraction | None:
    """The exact milli of one GPU a request is given: a whole GPU 1000, its milli, MiB × 1000 / the GPU's MiB,
    percent × 10; None for a memory share on a GPU of unknown size. Exact, unlike :func:`request_milli`, which
    rounds up: three pods of 5 GiB fill a 15 GiB GPU, though each rounds up to ⌈333.3⌉ = 334 milli (1002).
    An int wherever it is one, so the common milli shares never build a Fraction."""
    if share is None or share.cores_percent == 100:
        return MILLI_PER_GPU
    if share.milli is not None:
        return share.milli
    if share.memory_mib is not None:
        return Fraction(share.memory_mib * MILLI_PER_GPU, memory_mib) if memory_mib else None
    return (share.memory_percent or 100) * MILLI_PER_GPU // 100


class _Ledger:
    """A sharing node's GPUs while its bound pods are placed: free milli, and the exact load for over-commit."""

    def __init__(self, shares: GpuShares) -> None:
        self.shares = shares
        self.free = list(shares.free)
        self.load: list[int | Fraction] = [0] * len(self.free)  # exact milli bound on each GPU
        self.cores = [0] * len(self.free)

    def place(self, request: PodRequest, assigned: tuple[str, ...], uuids: Mapping[str, int]) -> None:
        indices = [uuids.get(a, int(a) if a.isdigit() else -1) for a in assigned]
        if not indices or not all(0 <= i < len(self.free) for i in indices):  # none, or GPUs it lacks: predict
            memory = self.shares.memory_mib[0] if self.shares.memory_mib else None
            indices = list(take_gpus(tuple(self.free), request_milli(request.share, memory), request.gpus))
            # Bound where nothing fits: it is on some GPU all the same, so it goes where it over-commits least.
            rest = sorted((i for i in range(len(self.free)) if i not in indices), key=lambda i: (-self.free[i], i))
            indices += rest[: max(0, request.gpus - len(indices))]
        for i in indices:
            memory = self.shares.memory_mib[i]
            self.free[i] = max(0, self.free[i] - request_milli(request.share, memory))
            self.load[i] += share_of_gpu(request.share, memory) or 0
            share = request.share
            if share is not None and share.convention == "hami" and share.cores_percent is not None:
                self.cores[i] += share.cores_percent

    def result(self) -> GpuShares:
        over = tuple(
            (i, math.ceil(load), cores)
            for i, (load, cores) in enumerate(zip(self.load, self.cores, strict=True))
            if load > MILLI_PER_GPU or cores > 100
        )
        s = self.shares
        return GpuShares(s.convention, s.model, s.memory_mib, tuple(self.free), overcommitted=over)


def _first_convention(gpus: tuple[SharedGpu, ...]) -> tuple[SharedGpu, ...]:
    convention = gpus[0].convention
    return tuple(g for g in gpus if g.convention == convention)


def gpu_shares(
    node: Mapping[str, Any],
    pods: Iterable[tuple[PodRequest, tuple[str, ...]]],
    offer: tuple[SharedGpu, ...] | NodeShareError | None = None,
) -> GpuShares | None:
    """What each GPU of a sharing node has free after its bound pods (request, assignment), in bind order;
    None for a node that offers no sharing. ``offer``: ``node_gpu_shares(node)`` as read before, or the
    error it raised (``node_facts``)."""
    if offer is None:
        try:
            offer = node_gpu_shares(node)
        except NodeShareError as exc:
            offer = exc
    if isinstance(offer, NodeShareError):
        return GpuShares("unreadable", None, (), (), problem=str(offer))
    offered = offer
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
    ledger = _Ledger(shares)
    for request, assigned in pods:
        if request.gpus and not request.mig:
            ledger.place(request, assigned, uuids)
    return ledger.result()
