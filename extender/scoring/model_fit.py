"""Does what the pod will need (``extender.model.needs``) fit what one of a node's ``nvidia.com/gpu`` gives it?

Which memory: the GPU's; a time-sliced replica's is the whole GPU's (replicas share everything); an MPS
client's is total / replicas (the device plugin's hard limit); a MIG slice's is its profile's.

- Declared memory that does not fit is a refusal (no pod change but the annotation can help).
- Inferred memory refuses a node only when the weights alone cannot fit (the server could not start);
  when they fit but the KV cache it wants does not, the node stays and its score is lowered:

      components × room,   room = share of the wanted KV cache that fits (0 … 1)

  so a node with no room keeps only its live headroom term, and the reason says why.
- Ranks of tensor or pipeline parallelism need whole GPUs that can talk to each other: replicas of one
  GPU (time-slicing, MPS) and MIG slices cannot serve them, so such nodes are refused. MPS also
  refuses more than one replica per pod (the device plugin's ``failRequestsGreaterThanOne``, v0.15).
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.cluster.state import NodeState
from extender.model.mig_profiles import profile_memory_gb
from extender.model.needs import MIB_PER_GB, fit_on, memory_need
from extender.model.pods import PodRequest

__all__ = ["Refusal", "Tight", "memory_refusal", "mig_refusal", "product_short", "shared_refusal", "tight_fit"]

_GIB = 1024


@dataclass(frozen=True)
class Refusal:
    reason: str
    unresolvable: bool = True


@dataclass(frozen=True)
class Tight:
    room: float  # share of the wanted KV cache there is room for: the factor on the plan's components
    note: str


def product_short(node: NodeState) -> str:
    """``Tesla-V100-SXM2-16GB`` → ``V100``; ``NVIDIA-H100-80GB-HBM3`` → ``H100``; "GPU" when unknown."""
    product = (node.product or "").replace(" ", "-")
    words = [w for w in product.split("-") if w and w.upper() not in ("NVIDIA", "TESLA", "GEFORCE")]
    return words[0] if words else "GPU"


def _slot_words(node: NodeState) -> str:
    kind = node.sharing
    if kind == "MPS replica":
        return f"MPS replicas ({(node.gpu_memory_mib or 0) / _GIB:.0f} GB / {node.replicas})"
    return "MIG slices" if kind == "MIG slice" else "GPUs"


def memory_refusal(node: NodeState, request: PodRequest) -> Refusal | None:
    """Declared memory over a slot's, or inferred weights alone over it; None when it may fit."""
    memory = node.slot_memory_mib
    need = memory_need(request)
    if not memory or need is None or fit_on(need, memory).fits:
        return None
    if need.declared:
        return Refusal(f"pod declares {_gib(need.per_gpu_mib)} per GPU, its {_slot_words(node)} have {_gib(memory)}")
    model = request.model
    assert model is not None and need.weights_mib is not None
    return Refusal(
        f"{model.short_name()} {model.precision} weights ≈ {need.weights_mib / MIB_PER_GB:.0f} GB/GPU"
        f" do not fit its {_gib(memory)} {_slot_words(node)}"
    )


def tight_fit(node: NodeState, request: PodRequest) -> Tight | None:
    """The weights fit a slot but not the KV cache the server wants beside them; None otherwise."""
    memory = node.slot_memory_mib
    need = memory_need(request)
    model = request.model
    if not memory or need is None or model is None or need.declared:
        return None
    fit = fit_on(need, memory)
    if fit.verdict != "tight":
        return None
    assert need.weights_mib is not None
    room = "no room for KV cache" if fit.room < 0.05 else f"room for {fit.room:.0%} of its KV cache"
    return Tight(
        fit.room,
        f"{model.short_name()} {model.precision} ≈ {need.weights_mib / MIB_PER_GB:.0f} GB/GPU + KV cache"
        f" on a {memory / _GIB:.0f} GB {product_short(node)}: {room}",
    )


def shared_refusal(node: NodeState, request: PodRequest) -> Refusal | None:
    """Parallel ranks over replicas or slices, or several MPS replicas; None on whole GPUs."""
    if node.sharing == "whole GPU":
        return None
    model = request.model
    split = model.split(request.gpus) if model is not None else 1
    if split > 1:
        return Refusal(f"{request.gpus} {node.sharing}s cannot run {split}-way tensor/pipeline parallelism")
    if node.mps and request.gpus > 1:
        return Refusal(f"MPS gives a pod at most 1 replica, pod needs {request.gpus}")
    return None


def _gib(mib: float) -> str:
    return f"{mib / _GIB:.0f} GiB" if mib >= _GIB else f"{mib:.0f} MiB"


def mig_refusal(request: PodRequest) -> Refusal | None:
    """MIG slices (``mixed`` strategy) too small for the pod's memory, or asked to run parallel ranks."""
    model = request.model
    slices = sum(n for _, n in request.mig)
    if model is not None and model.split(slices) > 1:
        return Refusal(f"{slices} MIG slices cannot run {model.split(slices)}-way tensor/pipeline parallelism")
    need = memory_need(request)
    for profile, _ in request.mig:
        memory = round(profile_memory_gb(profile) * _GIB)
        if need is not None and memory and not fit_on(need, memory).fits:
            what = "declared" if need.declared else f"weights of {model.short_name() if model else 'its model'}"
            return Refusal(f"MIG {profile} ({_gib(memory)}) is too small for the pod's {what}")
    return None
