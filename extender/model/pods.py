"""What a pod asks of GPUs: whole GPUs, MIG slices, and the gpu-advisor knobs in its annotations.

Effective request per resource follows Kubernetes: max(largest init container, sum of app containers),
from ``limits`` (extended resources must have requests == limits; a request alone also counts).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from extender.model.gpu_share import ShareRequest
    from extender.model.needs import ModelNeed

from extender.errors import InputError
from extender.model.gpu_vendor import VENDORS, is_gpu_resource
from extender.model.object_shape import POD_SHAPE, shape_problem
from extender.model.pod_content import by_content
from extender.model.pod_groups import ANNOTATION_GROUP_SIZE, PodGroup, group_size_knob, pod_group

# Re-exported: where callers have always found them. The readers this module calls import them from the leaf.
from extender.model.pod_terms import (
    GPU_RESOURCE,
    MIG_PREFIX,
    MODEL_ENV,
    MODEL_NAME_ENV,
    PodSpecError,
    ShareSpecError,
)
from extender.model.quantity import QuantityError, count_quantity, decimal_number

__all__ = [
    "ANNOTATION_GPU_MEMORY",
    "ANNOTATION_INTERCONNECT",
    "ANNOTATION_LATENCY_SENSITIVE",
    "GPU_RESOURCE",
    "MIG_PREFIX",
    "MODEL_ENV",
    "MODEL_NAME_ENV",
    "PodRequest",
    "PodSpecError",
    "ShareSpecError",
    "parse_memory_mib",
    "pod_request",
    "pod_request_keeping_counts",
    "pod_template",
]

ANNOTATION_INTERCONNECT = "gpu-advisor.io/interconnect"
ANNOTATION_GPU_MEMORY = "gpu-advisor.io/gpu-memory"
ANNOTATION_LATENCY_SENSITIVE = "gpu-advisor.io/latency-sensitive"

_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|[KMGT]|B)?\s*$", re.IGNORECASE)
_BYTES_PER = {
    "B": 1,
    "K": 10**3,
    "KI": 2**10,
    "M": 10**6,
    "MI": 2**20,
    "G": 10**9,
    "GI": 2**30,
    "T": 10**12,
    "TI": 2**40,
}
# No GPU holds a petabyte; a declared size past this is a typo or an attack, not a request to model.
MAX_GPU_MEMORY_MIB = 2**30


@dataclass(frozen=True)
class PodRequest:
    gpus: int = 0
    mig: tuple[tuple[str, int], ...] = ()  # (profile such as "1g.5gb", count), sorted
    interconnect: str | None = None  # "nvlink": NVLink between every pair is a must
    gpu_memory_mib: int | None = None  # declared VRAM per GPU (or per replica when time-sliced)
    latency_sensitive: bool = False
    other: tuple[tuple[str, int], ...] = field(default=())  # other nvidia.com/* resources
    share: ShareRequest | None = None  # a share of each of ``gpus`` GPUs (``gpu_share``); None: whole GPUs
    cpu_milli: int = 0  # what the pod requests of the node (``compute``)
    memory_mib: int = 0
    invalid: str | None = None  # why its GPU share cannot be read: every node is refused with this
    model: ModelNeed | None = None  # the model its server names, for the memory it will need (``needs``)
    resource: str = GPU_RESOURCE  # whose whole GPUs it asks for: nvidia.com/gpu or amd.com/gpu (``gpu_vendor``)
    group: PodGroup | None = None  # the multi-node job it is one pod of (``pod_groups``)

    @property
    def wants_gpu(self) -> bool:
        return self.gpus > 0 or bool(self.mig) or bool(self.other) or self.share is not None or bool(self.invalid)

    def describe(self) -> str:
        if self.share is not None and self.share.milli != 1000:
            return f"{self.gpus}× {_share_words(self.share)}"
        parts = [f"{self.gpus} GPU" + ("s" if self.gpus != 1 else "")] if self.gpus else []
        parts += [f"{n}× MIG {p}" for p, n in self.mig]
        return " + ".join(parts) or "no GPU"


def _share_words(share: ShareRequest) -> str:
    if share.milli is not None:
        return f"{share.milli} milli-GPU share"
    if share.cores_percent == 100:
        return "whole GPU (HAMi)"
    if share.memory_mib is not None:
        return f"{share.memory_mib} MiB GPU share"
    return f"{share.memory_percent}% GPU share"


def parse_memory_mib(text: str) -> int:
    """``40Gi``, ``40GiB``, ``80GB``, ``20000Mi``, ``24G`` → MiB. Decimal units are SI, binary ones IEC."""
    m = _MEMORY.match(text)
    if not m:
        raise PodSpecError(f"{_shown(text)} is not a memory size such as 40Gi, 80GB or 20000Mi")
    unit = (m.group(2) or "B").upper()
    unit = unit if unit == "B" else unit.removesuffix("B")
    # Exact decimal arithmetic: a float turns 400 nines into inf and round(inf) raises.
    mib = decimal_number(m.group(1)) * _BYTES_PER[unit] / 2**20
    if mib > MAX_GPU_MEMORY_MIB:
        raise PodSpecError(
            f"{_shown(text)} is larger than any GPU's memory (at most {MAX_GPU_MEMORY_MIB // 2**20} TiB)"
        )
    return round(mib)


def _shown(text: str, limit: int = 40) -> str:
    """A value for a message, cut short: an annotation may be 256 KiB long."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"… ({len(text)} characters)"


def _count(value: Any, resource: str, where: str) -> int:
    try:
        return count_quantity(value)
    except QuantityError as exc:
        raise PodSpecError(f"{where}: {resource} {exc}") from None


def _container_requests(container: Mapping[str, Any], where: str) -> dict[str, int]:
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise PodSpecError(f"{where}: resources must be an object")
    merged: dict[str, int] = {}
    for section in ("requests", "limits"):  # limits win: for extended resources they must be equal
        values = resources.get(section) or {}
        if not isinstance(values, Mapping):
            raise PodSpecError(f"{where}: resources.{section} must be an object")
        for name, value in values.items():
            if is_gpu_resource(name):
                merged[name] = _count(value, name, where)
    return merged


@by_content(PodSpecError)  # read once per content (``pod_content``)
def pod_request(pod: Mapping[str, Any]) -> PodRequest:
    """Read a pod (or pod template: ``metadata`` + ``spec``) into what it asks of GPUs."""
    if (problem := shape_problem(pod, POD_SHAPE)) is not None:
        raise PodSpecError(problem)  # every reader of the pod after this one may take its shape for granted
    spec = pod.get("spec") or {}
    totals: dict[str, int] = {}
    for n, container in enumerate(spec.get("containers") or []):
        for name, count in _container_requests(container, f"containers[{n}]").items():
            totals[name] = totals.get(name, 0) + count
    for n, container in enumerate(spec.get("initContainers") or []):
        # A restartable init container (sidecar) runs beside the app containers: it adds up.
        sidecar = container.get("restartPolicy") == "Always"
        for name, count in _container_requests(container, f"initContainers[{n}]").items():
            totals[name] = totals.get(name, 0) + count if sidecar else max(totals.get(name, 0), count)

    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    interconnect = _interconnect(annotations.get(ANNOTATION_INTERCONNECT))
    memory_mib = _gpu_memory(annotations.get(ANNOTATION_GPU_MEMORY))
    # Imported here: they take a second to import, and only a pod with a GPU share or a model needs them.
    from extender.model.compute import pod_compute
    from extender.model.gpu_share import HAMI_SHARE_FIELDS, share_request
    from extender.model.needs import guess_model

    try:
        share = share_request(pod)
    except PodSpecError as exc:
        raise ShareSpecError(str(exc)) from None
    cpu, memory_total = pod_compute(spec)
    mig = tuple(sorted((k.removeprefix(MIG_PREFIX), v) for k, v in totals.items() if k.startswith(MIG_PREFIX) and v))
    resource = _vendor_resource(totals)
    skip = (*(v.resource for v in VENDORS), *HAMI_SHARE_FIELDS)
    other = tuple(sorted((k, v) for k, v in totals.items() if v and k not in skip and not k.startswith(MIG_PREFIX)))
    return PodRequest(
        gpus=share.gpus if share is not None else totals.get(resource, 0),
        mig=mig,
        interconnect=interconnect,
        gpu_memory_mib=memory_mib,
        latency_sensitive=str(annotations.get(ANNOTATION_LATENCY_SENSITIVE, "")).lower() == "true",
        other=other,
        share=share,
        cpu_milli=cpu,
        memory_mib=memory_total,
        # Only a GPU pod's model matters, and reading command lines is not free on every bound pod.
        model=guess_model(spec.get("containers") or []) if totals or share is not None else None,
        resource=resource,
        group=_group(pod.get("metadata")),
    )


def _vendor_resource(totals: Mapping[str, int]) -> str:
    """The whole-GPU resource of the one vendor whose GPUs (or slices, such as amd.com/cpx_nps4) a pod asks
    for; nvidia.com/gpu when it asks for none."""
    asked = [v for v in VENDORS if any(n and k.startswith(v.domain) for k, n in totals.items())]
    if len(asked) > 1:
        # No node offers both, so such a pod could never be placed; say so rather than pick one.
        both = " and ".join(f"{v.domain}*" for v in asked)
        raise PodSpecError(f"asks for both {both} resources; one pod's GPUs come from one vendor")
    return asked[0].resource if asked else GPU_RESOURCE


def _group(meta: Any) -> PodGroup | None:
    try:
        return pod_group(meta)
    except InputError as exc:
        raise PodSpecError(str(exc)) from None


def _group_size(value: Any) -> int | None:
    try:
        return group_size_knob(value)
    except InputError as exc:
        raise PodSpecError(str(exc)) from None


def _interconnect(value: Any) -> str | None:
    if value is not None and str(value).lower() not in ("nvlink", "any", ""):
        raise PodSpecError(f"annotation {ANNOTATION_INTERCONNECT}: {_shown(str(value))} is not 'nvlink' or 'any'")
    return "nvlink" if str(value or "").lower() == "nvlink" else None


def _gpu_memory(value: Any) -> int | None:
    try:
        return parse_memory_mib(str(value)) if value not in (None, "") else None
    except PodSpecError as exc:
        raise PodSpecError(f"annotation {ANNOTATION_GPU_MEMORY}: {exc}") from None


_KNOBS = {
    ANNOTATION_INTERCONNECT: _interconnect,
    ANNOTATION_GPU_MEMORY: _gpu_memory,
    ANNOTATION_GROUP_SIZE: _group_size,
}


def pod_request_keeping_counts(pod: Mapping[str, Any]) -> tuple[PodRequest, tuple[str, ...]]:
    """What a pod that already runs holds, and why any of its knobs was ignored.

    Its GPU counts are read as strictly as ever (:class:`PodSpecError` when they cannot be), but an
    unreadable ``gpu-advisor.io/*`` knob is dropped rather than fatal: the API server accepted the
    pod and the kubelet gave it its GPUs whatever the annotation says, so the model must count them.
    """
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if not isinstance(annotations, Mapping):
        return pod_request({**pod, "metadata": {}}), (("metadata.annotations is not an object",) if annotations else ())
    problems: dict[str, str] = {}
    for key, read in _KNOBS.items():
        try:
            read(annotations.get(key))
        except PodSpecError as exc:
            problems[key] = str(exc)
    if problems:
        kept = {k: v for k, v in annotations.items() if k not in problems}
        pod = {**pod, "metadata": {**meta, "annotations": kept}}
    return pod_request(pod), tuple(problems.values())


def pod_template(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """{"metadata", "spec"} of the pods this object is or makes; None for other kinds.

    Warnings on Pods that a controller creates reach nobody (the controller, not the person, made them),
    so Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and CronJobs are judged by their template.
    """
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return {"metadata": obj.get("metadata") or {}, "spec": spec}
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        template = spec.get("template")
    elif kind == "CronJob":
        template = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template")
    else:
        return None
    if not isinstance(template, Mapping):
        return None
    # Knobs written on the controller count for its pods; the template's own annotations win.
    meta = dict(template.get("metadata") or {})
    outer = (obj.get("metadata") or {}).get("annotations") or {}
    meta["annotations"] = {
        **{k: v for k, v in outer.items() if str(k).startswith("gpu-advisor.io/")},
        **(meta.get("annotations") or {}),
    }
    return {"metadata": meta, "spec": template.get("spec") or {}}
