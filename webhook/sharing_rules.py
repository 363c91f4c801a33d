"""Admission advice for GPUs that are shared: time-slicing, MPS and MIG.

- time-slicing: replicas share everything (compute, memory) with no isolation;
- MPS (the device plugin's ``sharing.mps``): each client has a hard memory limit of total / replicas and a
  pod may hold only one replica;
- MIG: slices are isolated GPUs with no GPU-to-GPU path between them (no NVLink, no peer-to-peer), so a
  pod holding several can use them only as separate devices.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from extender.cluster.state import NodeState
from webhook.workload import GB_PER_MIB, ClusterView, Finding, Workload

__all__ = [
    "mig_multi_slice",
    "mps_memory",
    "timeslice_latency_sensitive",
    "timeslice_memory",
    "timeslice_multi_gpu",
]


def _gb(mib: int | None) -> float:
    return (mib or 0) * GB_PER_MIB


def _gpu_nodes(nodes: Iterable[NodeState]) -> list[NodeState]:
    return [n for n in nodes if n.gpu_total > 0]


def _gib(mib: float) -> str:
    return f"{mib / 1024:.0f}"


def _names(nodes: list[NodeState]) -> str:
    return ", ".join(n.name for n in nodes[:3]) + (" …" if len(nodes) > 3 else "")


def _parallel(w: Workload) -> int:
    return w.model.split(w.request.gpus) if w.model is not None else 1


def timeslice_multi_gpu(w: Workload, view: ClusterView) -> list[Finding]:
    k = w.request.gpus
    shared = [n for n in _gpu_nodes(view.eligible(w)) if n.time_sliced and n.gpu_total >= k]
    if k < 2 or not shared or _parallel(w) > 1:  # parallel ranks: tp-on-shared-gpu says it sharper
        return []
    return [
        Finding(
            "timeslice-multi-gpu",
            "warning",
            f"asks for {k} time-sliced GPUs ({_names(shared)}): the replicas may all be one physical GPU",
            "use whole GPUs (a node without gpu.replicas) for multi-GPU work, or ask for 1 GPU",
        )
    ]


def timeslice_latency_sensitive(w: Workload, view: ClusterView) -> list[Finding]:
    gpu_nodes = _gpu_nodes(view.eligible(w))
    if not w.request.gpus or not w.latency_sensitive or not gpu_nodes or not all(n.time_sliced for n in gpu_nodes):
        return []
    return [
        Finding(
            "timeslice-latency-sensitive",
            "warning",
            f"latency-sensitive, but all {len(gpu_nodes)} GPU nodes it may use are time-sliced",
            "time-slicing adds queueing delay; target whole-GPU or MIG nodes with a nodeSelector",
        )
    ]


def _vllm_share(w: Workload, replicas: int) -> list[Finding]:
    model = w.model
    if model is None or model.framework != "vllm":
        return []
    given = model.gpu_memory_utilization
    if given is not None and given <= 1 / replicas:
        return []
    shown = "unset (0.9)" if given is None else f"{given:g}"
    limit = 0.9 / replicas
    return [
        Finding(
            "timeslice-memory",
            "warning",
            f"vLLM on a GPU shared {replicas} ways with --gpu-memory-utilization {shown}",
            f"pass --gpu-memory-utilization {math.floor(limit * 100) / 100:g} (≤ 1/{replicas})",
        )
    ]


def timeslice_memory(w: Workload, view: ClusterView) -> list[Finding]:
    shared = [n for n in _gpu_nodes(view.eligible(w)) if n.time_sliced and n.gpu_memory_mib]
    if not w.request.gpus or not shared:
        return []
    out = _vllm_share(w, max(n.replicas for n in shared))
    memory = w.memory
    if memory is None:
        return out
    what = "declared" if memory.declared else "inferred"
    for node in shared:
        gpu = node.gpu_memory_mib or 0
        # Which GPU each neighbour's replicas sit on is not known: their declared memory is taken as spread
        # evenly over the node's physical GPUs, and the pod as landing on one of them.
        neighbours = node.declared_memory_mib() / max(1, node.physical_gpus)
        if memory.per_gpu_mib + neighbours > gpu:
            out.append(
                Finding(
                    "timeslice-memory",
                    "warning",
                    f"{node.name}: {_gib(memory.per_gpu_mib)} GiB/GPU ({what}) + {_gib(neighbours)} GiB/GPU declared"
                    f" by neighbours > one {_gib(gpu)} GiB GPU",
                    "shared GPUs have no memory isolation: one "
                    "OOM hits every tenant; declare less memory or use MIG/whole GPUs",
                )
            )
            break
    return out


def mps_memory(w: Workload, view: ClusterView) -> list[Finding]:
    """Under MPS a client gets total / replicas of the GPU's memory, a hard limit: more is an OOM."""
    memory = w.memory_per_gpu_gb()
    nodes = [n for n in _gpu_nodes(view.eligible(w)) if n.mps and n.slot_memory_mib]
    if not w.request.gpus or memory is None or not nodes:
        return []
    need, source = memory
    short = [n for n in nodes if need > _gb(n.slot_memory_mib)]
    if not short:
        return []
    node = short[0]
    limit, whole = _gb(node.slot_memory_mib), _gb(node.gpu_memory_mib)
    what = "declared" if source == "declared" else "inferred"
    return [
        Finding(
            "mps-memory",
            "error" if len(short) == len(_gpu_nodes(view.eligible(w))) else "warning",
            f"needs {need:.0f} GB/GPU ({what}); MPS on {_names(short)} caps a pod at {limit:.0f} GB"
            f" ({whole:.0f} GB / {node.replicas})",
            "use whole GPUs or a node with fewer MPS replicas, or a smaller (quantized) model",
        )
    ]


def mig_multi_slice(w: Workload, view: ClusterView) -> list[Finding]:
    """Several MIG slices in one pod: they cannot talk to each other (no NVLink, no peer-to-peer)."""
    slices = sum(n for _, n in w.request.mig)
    single = [n for n in _gpu_nodes(view.eligible(w)) if n.mig_single]
    if w.request.gpus >= 2 and single and len(single) == len(_gpu_nodes(view.eligible(w))):
        slices += w.request.gpus
    if slices < 2 or _parallel(w) > 1:  # parallel ranks: tp-on-shared-gpu says it sharper
        return []
    return [
        Finding(
            "mig-multi-slice",
            "warning",
            f"asks for {slices} MIG slices: MIG instances have no GPU-to-GPU path (no NVLink or P2P)",
            "use one larger slice for one process, or whole GPUs for work that spans GPUs",
        )
    ]
