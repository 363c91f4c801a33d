"""Shared (fractional) GPU requests, read the way three real conventions write them (nodes: ``gpu_share_node``).

**Alibaba GPU share** (openb trace; FGD simulator ``hkust-adsl/kubernetes-scheduler-simulator``
``pkg/type/open-gpu-share/utils/{const,pod}.go``, ``cache/gpunodeinfo.go``, ``data/pod_csv_to_yaml.py``): pod
annotations ``alibabacloud.com/gpu-milli`` (milli-GPU *per GPU*, 1000 = a whole GPU) and
``alibabacloud.com/gpu-count``; a share below 1000 is for exactly one GPU (another count panics the simulator;
without a count or a milli it places no GPU). ``alibabacloud.com/gpu-card-model`` lists the allowed models
joined by ``|``; one must equal the node's label of that name exactly.

**HAMi** (``Project-HAMi/HAMi`` ``pkg/device/nvidia/device.go`` GenerateResourceRequests, Fit, MutateAdmission;
``charts/hami/templates/scheduler/device-configmap.yaml``): per container, ``nvidia.com/gpu`` counts physical
GPUs, each given ``nvidia.com/gpumem`` MiB (a plain integer) or ``nvidia.com/gpumem-percentage`` of its memory,
and ``nvidia.com/gpucores`` percent of its SMs. Limits are read first, then requests. gpumem wins when both
memory fields are set; 0 in either means unset; with neither the default is 100 % (defaultMemory 0). Cores
default to 0, but the webhook sets 100 (the card exclusively) when memory is all of it; a share without
``nvidia.com/gpu`` gets defaultGPUNum 1; the webhook denies a percentage outside 0-100 (Fit clamps cores to
100; here both are refused). ``nvidia.com/use-gputype`` / ``nouse-gputype`` keep / drop GPUs whose model
contains one of the comma-separated names, ignoring case.

**Aliyun gpushare** (``AliyunContainerService/gpushare-scheduler-extender`` ``pkg/utils/{const,pod}.go``;
``gpushare-device-plugin`` ``cmd/nvidia/main.go``): ``aliyun.com/gpu-mem`` in container limits, summed over the
pod, all on *one* GPU, in the device plugin's ``--memory-unit`` (GiB by default, or MiB).

Across containers the Kubernetes rule of ``pods.py`` applies (app containers and sidecars add up; at least the
largest init container). One pod reads one share: containers asking different HAMi shares, two conventions at
once, or an Alibaba/Aliyun share beside ``nvidia.com/gpu`` are refused, naming the fields.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extender.model.pod_terms import GPU_RESOURCE, PodSpecError

__all__ = [
    "ALIBABA_COUNT",
    "ALIBABA_MILLI",
    "ALIBABA_MODEL",
    "ALIYUN_MEMORY",
    "HAMI_CORES",
    "HAMI_MEMORY",
    "HAMI_MEMORY_PERCENT",
    "HAMI_NOUSE_TYPE",
    "HAMI_SHARE_FIELDS",
    "HAMI_USE_TYPE",
    "MAX_GPU_MEMORY_MIB",
    "MILLI_PER_GPU",
    "ShareRequest",
    "milli_of",
    "share_request",
    "whole_number",
]  # fmt: skip

ALIBABA_MILLI = "alibabacloud.com/gpu-milli"
ALIBABA_COUNT = "alibabacloud.com/gpu-count"
ALIBABA_MODEL = "alibabacloud.com/gpu-card-model"
HAMI_MEMORY = "nvidia.com/gpumem"
HAMI_MEMORY_PERCENT = "nvidia.com/gpumem-percentage"
HAMI_CORES = "nvidia.com/gpucores"
HAMI_USE_TYPE = "nvidia.com/use-gputype"
HAMI_NOUSE_TYPE = "nvidia.com/nouse-gputype"
ALIYUN_MEMORY = "aliyun.com/gpu-mem"

MILLI_PER_GPU = 1000
MAX_GPU_MEMORY_MIB = 1 << 20  # 1 TiB per GPU: above any card made, so a larger figure is a unit slip
_DECIMAL = re.compile(r"^[+-]?\d+(\.\d*)?$")  # refuses nan, inf, 1e3 and quantities such as 3Gi
_HAMI_SHARE = HAMI_SHARE_FIELDS = (HAMI_MEMORY, HAMI_MEMORY_PERCENT, HAMI_CORES)
_HAMI_FIELDS: dict[str, tuple[str, int | None]] = {  # what each HAMi field means, and its bound
    GPU_RESOURCE: ("physical GPUs", None),
    HAMI_MEMORY: ("MiB of each GPU as a plain integer", MAX_GPU_MEMORY_MIB),
    HAMI_MEMORY_PERCENT: ("percent of each GPU's memory, 0-100", 100),
    HAMI_CORES: ("percent of each GPU's SMs, 0-100", 100),
}
_HamiShare = tuple[int | None, int | None, int]  # gpumem MiB, gpumem-percentage, gpucores


@dataclass(frozen=True)
class ShareRequest:
    """What a pod takes of each of ``gpus`` GPUs, in the words of the convention it came from."""

    convention: str  # "alibaba" | "hami" | "aliyun"
    source: str  # the field that carried it, for messages
    gpus: int = 1
    milli: int | None = None  # alibaba: milli-GPU per GPU, 1..1000
    memory_mib: int | None = None  # hami gpumem, aliyun gpu-mem × unit: MiB per GPU
    memory_percent: int | None = None  # hami gpumem-percentage, when no gpumem
    cores_percent: int | None = None  # hami gpucores: percent of the SMs
    models: tuple[str, ...] = ()  # allowed GPU models; empty: any
    excluded_models: tuple[str, ...] = ()  # hami nouse-gputype

    def allows(self, model: str) -> bool:
        """Alibaba matches a model name exactly; HAMi by case-insensitive substring."""
        if self.convention == "alibaba":
            return not self.models or model in self.models
        upper = model.upper()
        if self.models and not any(m.upper() in upper for m in self.models):
            return False
        return not any(m.upper() in upper for m in self.excluded_models)


def whole_number(value: Any, field: str, what: str, high: int | None = None) -> int:
    """A whole number ≥ 0 (and ≤ ``high``) from JSON or a string; PodSpecError names ``field`` and says ``what``."""
    if isinstance(value, bool) or not isinstance(value, int | float | str) or not _DECIMAL.match(str(value).strip()):
        raise PodSpecError(f"{field}: {value!r} is not a number ({what})")
    number = float(str(value).strip())
    if number != int(number):
        raise PodSpecError(f"{field}: {value!r} is not a whole number ({what})")
    if number < 0:
        raise PodSpecError(f"{field}: {value!r} is negative ({what})")
    if high is not None and number > high:
        raise PodSpecError(f"{field}: {int(number)} is over {high} ({what})")
    return int(number)


def _containers(spec: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], bool]]:
    """(field path, container, adds up): app containers and sidecars add up, other init containers don't."""
    out: list[tuple[str, Mapping[str, Any], bool]] = []
    for key in ("containers", "initContainers"):
        items = spec.get(key) or []
        if not isinstance(items, list) or not all(isinstance(c, Mapping) for c in items):
            raise PodSpecError(f"spec.{key} must be a list of objects")
        out += [
            (f"spec.{key}[{n}]", c, key == "containers" or c.get("restartPolicy") == "Always")
            for n, c in enumerate(items)
        ]
    return out


def _fields(container: Mapping[str, Any], where: str, names: tuple[str, ...]) -> dict[str, tuple[str, Any]]:
    """name → (field path, value). Limits win; a request unlike its limit is refused, as the API server does."""
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise PodSpecError(f"{where}.resources must be an object")
    found: dict[str, tuple[str, Any]] = {}
    for section in ("requests", "limits"):
        values = resources.get(section) or {}
        if not isinstance(values, Mapping):
            raise PodSpecError(f"{where}.resources.{section} must be an object")
        for name in names:
            if name in values:
                field = f'{where}.resources.{section}["{name}"]'
                if name in found and str(found[name][1]).strip() != str(values[name]).strip():
                    raise PodSpecError(f"{field}: {values[name]!r} differs from {found[name][0]} {found[name][1]!r}")
                found[name] = (field, values[name])
    return found


def _effective(parts: list[tuple[bool, int]]) -> int:
    total = sum(n for adds, n in parts if adds)
    for adds, n in parts:
        total = total if adds else max(total, n)
    return total


def _hami_part(fields: dict[str, tuple[str, Any]]) -> tuple[int, _HamiShare]:
    """One container's GPU count and (gpumem MiB, gpumem-percentage, gpucores) after HAMi's defaults."""
    read = {n: whole_number(fields[n][1], fields[n][0], *_HAMI_FIELDS[n]) for n in _HAMI_FIELDS if n in fields}
    count = read.get(GPU_RESOURCE, 1)  # HAMi's defaultGPUNum
    if count == 0 and any(read.get(n) for n in _HAMI_SHARE):
        raise PodSpecError(f"{fields[GPU_RESOURCE][0]}: a count of 0 with a share of each GPU")
    memory = read.get(HAMI_MEMORY) or None
    percent = None if memory else (read.get(HAMI_MEMORY_PERCENT) or 100)
    # HAMi's webhook makes the card exclusive (gpucores 100) when no cores are asked and memory is all of it
    exclusive = read[HAMI_MEMORY_PERCENT] == 100 if HAMI_MEMORY_PERCENT in read else HAMI_MEMORY not in read
    return count, (memory, percent, read.get(HAMI_CORES, 100 if exclusive else 0))


def _hami(containers: list[tuple[str, Mapping[str, Any], bool]], notes: Mapping[str, Any]) -> ShareRequest | None:
    parts: list[tuple[str, bool, int, _HamiShare]] = []
    source = ""  # the first share field: a container with only nvidia.com/gpu asks a whole, exclusive GPU
    for where, container, adds in containers:
        fields = _fields(container, where, (GPU_RESOURCE, *_HAMI_SHARE))
        if fields:
            parts.append((where, adds, *_hami_part(fields)))
            source = source or next((fields[n][0] for n in _HAMI_SHARE if n in fields), "")
    if not source:
        return None
    first = next(p for p in parts if source.startswith(p[0] + "."))
    for where, _, count, share in parts:
        if count and share != first[3]:
            raise PodSpecError(
                f"{where}: asks {share} (gpumem MiB, gpumem %, cores %) of each GPU but {first[0]} asks {first[3]};"
                " one share per pod is supported"
            )
    memory, percent, cores = first[3]
    return ShareRequest(
        "hami", source, _effective([(a, n) for _, a, n, _ in parts]), None, memory, percent, cores,
        _names(notes.get(HAMI_USE_TYPE), ","), _names(notes.get(HAMI_NOUSE_TYPE), ","),
    )  # fmt: skip


def _names(text: Any, sep: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in str(text or "").split(sep) if n.strip())


def _alibaba(notes: Mapping[str, Any]) -> ShareRequest | None:
    milli_field, count_field = f'metadata.annotations["{ALIBABA_MILLI}"]', f'metadata.annotations["{ALIBABA_COUNT}"]'
    raw_milli, raw_count = notes.get(ALIBABA_MILLI), notes.get(ALIBABA_COUNT)
    milli = (
        None if raw_milli is None else whole_number(raw_milli, milli_field, "milli-GPU per GPU, 1000 = one GPU", 1000)
    )
    count = None if raw_count is None else whole_number(raw_count, count_field, "GPUs")
    if not milli and not count:
        return None  # nothing, or zeros: a CPU-only pod
    if count is None:
        raise PodSpecError(f"{count_field}: missing beside {ALIBABA_MILLI} {milli}")
    if count == 0:
        raise PodSpecError(f"{count_field}: a count of 0 with a share of {milli} milli")
    if not milli:
        raise PodSpecError(
            f"{milli_field}: {'missing' if milli is None else 0} beside {ALIBABA_COUNT} {count} (1000 asks whole GPUs)"
        )
    if milli < MILLI_PER_GPU and count > 1:
        raise PodSpecError(f"{count_field}: {count}, but a share below 1000 milli is for exactly one GPU")
    return ShareRequest("alibaba", milli_field, count, milli, models=_names(notes.get(ALIBABA_MODEL), "|"))


def _aliyun(containers: list[tuple[str, Mapping[str, Any], bool]], unit_mib: int) -> ShareRequest | None:
    parts: list[tuple[bool, int]] = []
    source = ""
    for where, container, adds in containers:
        for field, value in _fields(container, where, (ALIYUN_MEMORY,)).values():
            parts.append((adds, whole_number(value, field, f"memory of one GPU in units of {unit_mib} MiB")))
            source = source or field
    units = _effective(parts)
    if not units:
        return None
    if units * unit_mib > MAX_GPU_MEMORY_MIB:
        raise PodSpecError(f"{source}: {units} × {unit_mib} MiB is over {MAX_GPU_MEMORY_MIB} MiB, more than any GPU")
    return ShareRequest("aliyun", source, 1, memory_mib=units * unit_mib)


def share_request(pod: Mapping[str, Any], *, aliyun_unit_mib: int = 1024) -> ShareRequest | None:
    """The pod's shared-GPU request, or None when it asks none (whole ``nvidia.com/gpu`` alone is not a share).

    ``aliyun_unit_mib`` is the gpushare device plugin's ``--memory-unit``: 1024 for GiB (its default), 1 for MiB.
    Raises PodSpecError naming the field for anything malformed or contradictory.
    """
    spec, notes = pod.get("spec") or {}, (pod.get("metadata") or {}).get("annotations") or {}
    if not isinstance(spec, Mapping) or not isinstance(notes, Mapping):
        raise PodSpecError("spec and metadata.annotations must be objects")
    containers = _containers(spec)
    found = [r for r in (_alibaba(notes), _hami(containers, notes), _aliyun(containers, aliyun_unit_mib)) if r]
    if len(found) > 1:
        raise PodSpecError(f"{found[0].source} and {found[1].source} both ask a shared GPU; use one convention")
    if found and found[0].convention != "hami":
        whole = [
            f for w, c, _ in containers for f, v in _fields(c, w, (GPU_RESOURCE,)).values() if str(v).strip() != "0"
        ]
        if whole:
            raise PodSpecError(f"{whole[0]} and {found[0].source} both ask GPUs; use one convention")
    return found[0] if found else None


def milli_of(request: ShareRequest, gpu_memory_mib: int) -> int:
    """Milli-GPU the request takes of one GPU with ``gpu_memory_mib`` MiB; above 1000 means it cannot fit that GPU.

    alibaba: its milli. hami: 1000 when gpucores is 100 (HAMi then gives the card to no one else), else
    ⌈gpumem × 1000 / gpu_memory_mib⌉, else percentage × 10; cores below 100 do not count (HAMi packs memory
    and cores apart: 40 %/60 % and 60 %/40 % pods share a card). aliyun: ⌈memory × 1000 / gpu_memory_mib⌉.
    Rounded up, because a share rounded down would promise room the card does not have:
    20000 MiB of 81920 → ⌈244.1⌉ = 245; 8 GiB of 16 GiB → 500.
    """
    if gpu_memory_mib <= 0:
        raise ValueError(f"gpu_memory_mib must be positive, got {gpu_memory_mib}")
    if request.milli is not None:
        return request.milli
    if request.cores_percent == 100:
        return MILLI_PER_GPU
    if request.memory_mib is not None:
        return -(-request.memory_mib * MILLI_PER_GPU // gpu_memory_mib)
    return (request.memory_percent or 100) * MILLI_PER_GPU // 100
