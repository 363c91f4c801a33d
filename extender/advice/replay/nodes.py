"""Replay node state and the simulator's filter and GPU placement rules, as pure functions.

A `NodeState` is immutable and carries no identity (no name, no rank), so two nodes in the same
state score the same for any scorer, which is what lets the engine memoise scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from extender.advice.replay.go_random import GoRandom
from extender.advice.replay.specs import MILLI, NodeSpec, PodShape, model_allowed


@dataclass(frozen=True, slots=True)
class NodeState:
    """Free resources of one node: CPU milli, memory MiB, milli per GPU (index order), model, GPU tags.

    `tags` holds GpuClustering's affinity tags of the GPU pods placed here (pods never leave).
    """

    model: str
    cpu_free: int
    mem_free: int
    gpus: tuple[int, ...]
    tags: frozenset[str] = frozenset()
    # Worked out once: states key every memo, and hashing the GPU tuple on each probe dominated replays.
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.model, self.cpu_free, self.mem_free, self.gpus, self.tags)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def gpu_free(self) -> int:
        """Total free milli-GPU, `G` in the policy formulas."""
        return sum(self.gpus)


def initial_state(spec: NodeSpec) -> NodeState:
    """An empty node: every GPU at 1000 milli."""
    return NodeState(spec.model, spec.cpu_milli, spec.memory_mib, (MILLI,) * spec.gpu_count)


def fits(node: NodeState, pod: PodShape) -> bool:
    """The simulator's filters: CPU and memory fit, GPU model allowed, a GPU with enough milli for a
    sharing pod, `num_gpu` fully free GPUs otherwise."""
    if node.cpu_free < pod.cpu_milli or node.mem_free < pod.memory_mib:
        return False
    if pod.gpu_request <= 0:
        return True
    if not node.gpus or not model_allowed(node.model, pod.gpu_spec):
        return False
    if pod.is_sharing:
        return any(g >= pod.gpu_milli for g in node.gpus)
    return node.gpus.count(MILLI) >= pod.num_gpu


def best_fit_gpu(node: NodeState, milli: int) -> int:
    """`best`: the GPU with the least free milli that still fits, lowest index on ties."""
    chosen = -1
    for index, free in enumerate(node.gpus):
        if free >= milli and (chosen < 0 or free < node.gpus[chosen]):
            chosen = index
    if chosen < 0:
        raise ValueError(f"no GPU with {milli} free milli on {node}")
    return chosen


def random_gpu(node: NodeState, milli: int, rng: GoRandom) -> int:
    """`random`: uniform among the GPUs that fit, by reservoir sampling as the simulator draws it (the
    k-th GPU that fits replaces the choice when ``Intn(k)`` is 0: one draw per fitting GPU)."""
    chosen, seen = -1, 0
    for index, free in enumerate(node.gpus):
        if free >= milli:
            seen += 1
            if rng.intn(seen) == 0:
                chosen = index
    if chosen < 0:
        raise ValueError(f"no GPU with {milli} free milli on {node}")
    return chosen


def exclusive_gpus(node: NodeState, count: int) -> tuple[int, ...]:
    """Whole-GPU pods always take the lowest-index fully free GPUs, whatever the policy."""
    chosen = tuple(index for index, free in enumerate(node.gpus) if free == MILLI)[:count]
    if len(chosen) < count:
        raise ValueError(f"{count} free GPUs wanted on {node}")
    return chosen


def place(node: NodeState, pod: PodShape, gpu_index: int = -1) -> NodeState:
    """The node after placing `pod`; a sharing pod goes on `gpu_index`, whole GPUs per `exclusive_gpus`."""
    gpus = node.gpus
    tags = node.tags
    if pod.gpu_request > 0:
        taken = (gpu_index,) if pod.is_sharing else exclusive_gpus(node, pod.num_gpu)
        if pod.is_sharing and not 0 <= gpu_index < len(gpus):
            raise ValueError(f"GPU index {gpu_index} out of range for {node}")
        gpus = tuple(free - pod.gpu_milli if index in taken else free for index, free in enumerate(gpus))
        if min(gpus) < 0:
            raise ValueError(f"GPU {gpu_index} of {node} cannot take {pod.gpu_milli} milli")
        tags = tags | {pod.gpu_tag}
    return NodeState(node.model, node.cpu_free - pod.cpu_milli, node.mem_free - pod.memory_mib, gpus, tags)


def subtract_packed(node: NodeState, pod: PodShape) -> tuple[int, ...]:
    """GPU milli after the simulator's `NodeResource.Sub`: each requested GPU comes from the least-free
    GPU that fits (stable by index). FGD scores whole-GPU pods on this hypothetical state."""
    gpus = list(node.gpus)
    wanted = pod.num_gpu
    for index in sorted(range(len(gpus)), key=gpus.__getitem__):
        if wanted <= 0:
            break
        if pod.gpu_milli <= gpus[index]:
            gpus[index] -= pod.gpu_milli
            wanted -= 1
    return tuple(gpus)
