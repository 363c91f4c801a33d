"""What a node offers for sharing, per GPU, in each convention it advertises (requests: ``gpu_share``).

**Alibaba** (FGD simulator ``pkg/type/open-gpu-share/utils/node.go``, ``cache/gpunodeinfo.go``; the openb nodes in
``data/node_yaml``): capacity ``alibabacloud.com/gpu-count`` GPUs of 1000 milli each (capacity
``alibabacloud.com/gpu-milli`` only marks a sharing node: the openb nodes write count × 1000, other tools 1000),
model in the label ``alibabacloud.com/gpu-card-model`` (openb names such as ``V100M16``, ``G2``).

**HAMi** (``pkg/device/nvidia/device.go`` GetNodeDevices, ``pkg/device/devices.go`` DecodeNodeDevices,
``pkg/device-plugin/nvidiadevice/nvinternal/plugin/register.go``): annotation ``hami.io/node-nvidia-register``,
a JSON list of {id, index, count (vGPUs per GPU: deviceSplitCount, 10 by default), devmem (MiB × memory
scaling), devcore (100 × core scaling), type (model, such as ``NVIDIA A100-SXM4-40GB``), health, mode}; older
releases (``docs/develop/protocol.md``) write ``uuid,count,devmem,devcore,type,numa,health[,index,mode]``
segments each ended by ``:``. The node's ``nvidia.com/gpu`` capacity counts vGPUs, not GPUs.

**Aliyun** (``gpushare-scheduler-extender`` ``pkg/utils/node.go``, ``pkg/cache/nodeinfo.go``;
``gpushare-device-plugin`` ``pkg/gpu/nvidia/nvidia.go``): capacity ``aliyun.com/gpu-mem`` is the total over
``aliyun.com/gpu-count`` GPUs in the device plugin's unit (GiB floored from the card's MiB by default, so a
16160 MiB card offers 15); each GPU holds total // count.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extender.errors import InputError
from extender.model.gpu_share import ALIBABA_COUNT, ALIBABA_MODEL, ALIYUN_MEMORY, MAX_GPU_MEMORY_MIB, whole_number
from extender.model.pods import PodSpecError

__all__ = ["ALIYUN_COUNT", "HAMI_NODE_REGISTER", "NodeShareError", "SharedGpu", "node_gpu_shares"]

HAMI_NODE_REGISTER = "hami.io/node-nvidia-register"
ALIYUN_COUNT = "aliyun.com/gpu-count"


class NodeShareError(InputError):
    """A node's shared-GPU capacity, label or annotation cannot be read; the message names the field."""


@dataclass(frozen=True)
class SharedGpu:
    """One physical GPU as a node advertises it for sharing."""

    convention: str
    index: int
    model: str | None = None
    memory_mib: int | None = None  # hami devmem; aliyun per-GPU gpu-mem × unit
    split: int | None = None  # hami: how many vGPUs may share it
    cores_percent: int = 100
    uuid: str | None = None
    healthy: bool = True


def node_gpu_shares(node: Mapping[str, Any], *, aliyun_unit_mib: int = 1024) -> tuple[SharedGpu, ...]:
    """Every GPU the node offers for sharing, in each convention it advertises (capacity, else allocatable)."""
    meta, status = node.get("metadata") or {}, node.get("status") or {}
    section = "capacity" if status.get("capacity") else "allocatable"
    capacity, labels, notes = status.get(section) or {}, meta.get("labels") or {}, meta.get("annotations") or {}
    if not all(isinstance(m, Mapping) for m in (capacity, labels, notes)):
        raise NodeShareError(f"status.{section}, metadata.labels and metadata.annotations must be objects")
    try:
        count = whole_number(capacity.get(ALIBABA_COUNT, 0), f'status.{section}["{ALIBABA_COUNT}"]', "GPUs")
        alibaba = tuple(SharedGpu("alibaba", i, labels.get(ALIBABA_MODEL)) for i in range(count))
        return alibaba + _aliyun_node(capacity, section, aliyun_unit_mib) + _hami_node(notes)
    except PodSpecError as exc:
        raise NodeShareError(str(exc)) from None


def _aliyun_node(capacity: Mapping[str, Any], section: str, unit_mib: int) -> tuple[SharedGpu, ...]:
    fields = {n: f'status.{section}["{n}"]' for n in (ALIYUN_MEMORY, ALIYUN_COUNT)}
    total = whole_number(capacity.get(ALIYUN_MEMORY, 0), fields[ALIYUN_MEMORY], f"memory in units of {unit_mib} MiB")
    count = whole_number(capacity.get(ALIYUN_COUNT, 0), fields[ALIYUN_COUNT], "GPUs")
    if total and not count:
        raise PodSpecError(f"{fields[ALIYUN_COUNT]}: missing or 0 beside {ALIYUN_MEMORY} {total}")
    return tuple(SharedGpu("aliyun", i, memory_mib=total // count * unit_mib) for i in range(count if total else 0))


def _hami_node(notes: Mapping[str, Any]) -> tuple[SharedGpu, ...]:
    text = str(notes.get(HAMI_NODE_REGISTER) or "").strip()
    field = f'metadata.annotations["{HAMI_NODE_REGISTER}"]'
    if not text:
        return ()
    if text.startswith("["):  # today's JSON; Go omits zero values, so a missing health is false
        try:
            items = json.loads(text)
        except ValueError:
            raise PodSpecError(f"{field}: not JSON") from None
        if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
            raise PodSpecError(f"{field}: not a list of devices")
    else:  # older releases: uuid,count,devmem,devcore,type,numa,health[,index,mode] segments ended by ":"
        keys = ("id", "count", "devmem", "devcore", "type", "numa", "health", "index", "mode")
        segments = [seg.split(",") for seg in text.split(":") if seg]
        if any(len(seg) not in (7, 9) for seg in segments):
            raise PodSpecError(f"{field}: a device has neither 7 nor 9 comma-separated fields")
        items = [dict(zip(keys, seg, strict=False)) for seg in segments]
    return tuple(_hami_gpu(item, n, f"{field}[{n}]") for n, item in enumerate(items))


def _hami_gpu(item: Mapping[str, Any], n: int, field: str) -> SharedGpu:
    index = whole_number(item.get("index", n), f"{field}.index", "device index")
    split = whole_number(item.get("count", 0), f"{field}.count", "vGPUs per GPU")
    memory = whole_number(item.get("devmem", 0), f"{field}.devmem", "MiB", MAX_GPU_MEMORY_MIB)
    cores = whole_number(item.get("devcore", 0), f"{field}.devcore", "percent of the SMs")
    healthy = str(item.get("health")).lower() in ("true", "t", "1")  # Go's ParseBool; JSON true prints True
    return SharedGpu("hami", index, item.get("type"), memory, split, cores, item.get("id"), healthy)
