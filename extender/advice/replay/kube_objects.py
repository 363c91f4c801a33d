"""Kubernetes Node and Pod objects as the replay sees them: `NodeSpec`s and `PodShape`s.

A Node gives its allocatable CPU and memory (absent: not a limit, as in a short snapshot that lists
only GPUs), its physical GPUs (a sharing convention's GPU count, else `nvidia.com/gpu` divided by the
time-slicing replicas) and its model (Alibaba's card-model label, the sharing convention's model, or
`nvidia.com/gpu.product`). A Pod gives its CPU and memory requests (limits when no request; init
containers as Kubernetes counts them) and its GPUs: a shared GPU in any of the three conventions
(`extender.model.gpu_share`), else whole `nvidia.com/gpu`. A share asked in MiB becomes milli-GPU of
the cluster's GPU memory, which the replay can do only when every GPU node reports the same size.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any

from extender.advice.replay.openb import ReplayInputError
from extender.advice.replay.specs import NodeSpec, Pod, PodShape
from extender.cluster.node import LABEL_MEMORY, LABEL_PRODUCT, LABEL_REPLICAS
from extender.model.gpu_share import ALIBABA_MODEL, MILLI_PER_GPU, ShareRequest, milli_of, share_request
from extender.model.gpu_share_node import NodeShareError, node_gpu_shares
from extender.model.pods import PodSpecError, parse_memory_mib, pod_request

__all__ = ["NO_MODEL", "UNBOUNDED", "ClusterNode", "cluster_nodes", "cluster_pods", "parse_cpu_milli"]

UNBOUNDED = 1 << 40  # CPU milli or memory MiB of a node that does not say: never the limit
NO_MODEL = "<no model of this cluster>"  # the gpu_spec of a pod that allows none of the cluster's models
_CPU = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(m?)\s*$")


@dataclass(frozen=True, slots=True)
class ClusterNode:
    """A node for the replay and the memory of one of its GPUs, when it says."""

    spec: NodeSpec
    gpu_memory_mib: int | None


def parse_cpu_milli(text: str) -> int:
    """Kubernetes CPU quantities: `500m` → 500, `2` → 2000, `0.25` → 250 (rounded up, as the API server does)."""
    match = _CPU.match(str(text))
    if not match:
        raise ValueError(f"{text!r} is not a CPU quantity such as 500m or 2")
    value = Decimal(match.group(1)) * (1 if match.group(2) else 1000)
    return int(value.to_integral_value(rounding=ROUND_CEILING))


def _quantity(resources: Mapping[str, Any], name: str, where: str) -> int | None:
    raw = resources.get(name)
    if raw is None:
        return None
    try:
        return parse_cpu_milli(str(raw)) if name == "cpu" else parse_memory_mib(str(raw))
    except (ValueError, PodSpecError) as exc:
        raise ReplayInputError(f"{where}: {name}: {exc}") from None


def _node(node: Mapping[str, Any], index: int) -> ClusterNode:
    meta, status = node.get("metadata") or {}, node.get("status") or {}
    name = str(meta.get("name") or "")
    where = f"node {name or f'#{index}'}"
    if not name:
        raise ReplayInputError(f"{where}: a Node needs metadata.name")
    resources = status.get("allocatable") or status.get("capacity") or {}
    labels = meta.get("labels") or {}
    cpu = _quantity(resources, "cpu", where)
    memory = _quantity(resources, "memory", where)
    try:
        shares = node_gpu_shares(node)
    except NodeShareError as exc:
        raise ReplayInputError(f"{where}: {exc}") from None
    convention = [gpu for gpu in shares if gpu.convention == shares[0].convention] if shares else []
    if convention:
        count = len(convention)
        model = convention[0].model
        gpu_memory = convention[0].memory_mib
    else:
        try:
            whole = int(str(resources.get("nvidia.com/gpu", 0)))
            replicas = max(1, int(str(labels.get(LABEL_REPLICAS) or 1)))
        except ValueError:
            raise ReplayInputError(f"{where}: nvidia.com/gpu and {LABEL_REPLICAS} must be whole numbers") from None
        count, model, gpu_memory = whole // replicas, None, None
    model = str(labels.get(ALIBABA_MODEL) or model or labels.get(LABEL_PRODUCT) or ("GPU" if count else ""))
    if gpu_memory is None and str(labels.get(LABEL_MEMORY) or "").isdigit():
        gpu_memory = int(labels[LABEL_MEMORY])
    spec = NodeSpec(name, UNBOUNDED if cpu is None else cpu, UNBOUNDED if memory is None else memory, count, model)
    return ClusterNode(spec, gpu_memory or None)


def cluster_nodes(objects: Sequence[Mapping[str, Any]]) -> tuple[ClusterNode, ...]:
    """Every Node object, in the order given (the order node ranks refer to)."""
    nodes = tuple(_node(obj, index) for index, obj in enumerate(objects))
    if not nodes:
        raise ReplayInputError("no Node objects")
    names = [node.spec.name for node in nodes]
    if len(set(names)) != len(names):
        raise ReplayInputError("two Nodes share a name")
    return nodes


def _compute(spec: Mapping[str, Any], where: str) -> tuple[int, int]:
    """(CPU milli, memory MiB) the pod requests: app containers and sidecars add up; other init
    containers count only as much as the largest of them; a missing request takes the limit."""
    totals = {"cpu": 0, "memory": 0}
    for key in ("containers", "initContainers"):
        for n, container in enumerate(spec.get(key) or []):
            resources = container.get("resources") or {}
            requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
            adds = key == "containers" or container.get("restartPolicy") == "Always"
            for name in totals:
                value = _quantity(requests, name, f"{where}.{key}[{n}]")
                value = _quantity(limits, name, f"{where}.{key}[{n}]") if value is None else value
                totals[name] = totals[name] + (value or 0) if adds else max(totals[name], value or 0)
    for name in totals:  # RuntimeClass overhead is scheduled too
        totals[name] += _quantity(spec.get("overhead") or {}, name, f"{where}.overhead") or 0
    return totals["cpu"], totals["memory"]


def _share_milli(share: ShareRequest, gpu_memory_mib: int | None, where: str) -> int:
    if share.memory_mib is not None and share.cores_percent != 100:
        if gpu_memory_mib is None:
            raise ReplayInputError(
                f"{where}: {share.source} asks GPU memory in MiB, but the nodes do not report one GPU memory size"
                " (label nvidia.com/gpu.memory); ask a percentage or milli-GPU instead"
            )
        milli = milli_of(share, gpu_memory_mib)
    else:
        milli = milli_of(share, 1)  # percent or a whole card: the memory size does not enter
    if milli > MILLI_PER_GPU:
        raise ReplayInputError(f"{where}: {share.source} asks more than one GPU of {gpu_memory_mib} MiB")
    if milli < MILLI_PER_GPU and share.gpus > 1:
        raise ReplayInputError(f"{where}: {share.source}: the replay models a share of one GPU, not of {share.gpus}")
    return milli


def _spec_of(share: ShareRequest | None, selector: Mapping[str, Any], models: Sequence[str]) -> str:
    if share is not None and share.convention == "alibaba" and share.models:
        return "|".join(share.models)
    if share is not None and (share.models or share.excluded_models):
        allowed = [model for model in models if share.allows(model)]
        return "|".join(allowed) if allowed else NO_MODEL
    return str(selector.get(ALIBABA_MODEL) or selector.get(LABEL_PRODUCT) or "")


def _pod(obj: Mapping[str, Any], index: int, gpu_memory_mib: int | None, models: Sequence[str]) -> Pod:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    name = str(meta.get("name") or f"pod-{index}")
    where = f"pod {meta.get('namespace', 'default')}/{name}" if meta.get("name") else f"pod #{index}"
    try:
        cpu, memory = _compute(spec, where)
        share = share_request(obj)
        if share is not None:
            num_gpu, milli = share.gpus, _share_milli(share, gpu_memory_mib, where)
        else:
            request = pod_request(obj)
            if request.mig:
                raise ReplayInputError(f"{where}: MIG slices ({request.describe()}) are not modelled by the replay")
            num_gpu, milli = request.gpus, MILLI_PER_GPU
    except PodSpecError as exc:
        raise ReplayInputError(f"{where}: {exc}") from None
    gpu_spec = _spec_of(share, spec.get("nodeSelector") or {}, models) if num_gpu else ""
    return Pod(name, PodShape(cpu, memory, num_gpu, milli if num_gpu else 0, gpu_spec))


def cluster_pods(objects: Sequence[Mapping[str, Any]], nodes: Sequence[ClusterNode]) -> tuple[Pod, ...]:
    """Every Pod object as a replay pod; `nodes` give the GPU memory and models shares are read against."""
    sizes = {node.gpu_memory_mib for node in nodes if node.spec.gpu_count and node.gpu_memory_mib}
    gpu_memory = sizes.pop() if len(sizes) == 1 else None
    models = sorted({node.spec.model for node in nodes if node.spec.gpu_count})
    pods = tuple(_pod(obj, index, gpu_memory, models) for index, obj in enumerate(objects))
    if not pods:
        raise ReplayInputError("no Pod objects")
    return pods
