"""The replay's value types: a node as the trace lists it, a pod's request, and a pod in the arrival order.

Kept apart from the loader so scorers and the engine can import them without touching any file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

# One GPU is 1000 milli-GPU throughout the trace and the simulator.
MILLI = 1000


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One row of `openb_node_list_gpu_node.csv`: capacity of a node before anything is placed."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpu_count: int
    model: str


@dataclass(frozen=True, slots=True)
class PodShape:
    """What a pod requests; two pods with equal shapes are interchangeable for every scorer.

    `gpu_milli` is per GPU (below 1000 only for a single shared GPU); `gpu_spec` lists the allowed
    GPU models joined by `|` (empty: any model).
    """

    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    gpu_spec: str = ""
    _hash: int = field(default=0, init=False, repr=False, compare=False)  # shapes key every memo

    def __post_init__(self) -> None:
        fields = (self.cpu_milli, self.memory_mib, self.num_gpu, self.gpu_milli, self.gpu_spec)
        object.__setattr__(self, "_hash", hash(fields))

    def __hash__(self) -> int:
        return self._hash

    @property
    def gpu_request(self) -> int:
        """Milli-GPU the pod takes in total (what `arrived` and `used` count)."""
        return self.num_gpu * self.gpu_milli if self.num_gpu > 0 else 0

    @property
    def is_sharing(self) -> bool:
        """A fraction of one GPU: the only kind whose GPU index is a policy choice."""
        return self.num_gpu == 1 and self.gpu_milli < MILLI

    @property
    def gpu_tag(self) -> str:
        """GpuClustering's affinity tag: `share`, `<k>-gpu`, or empty for a CPU-only pod."""
        if self.num_gpu <= 0 or self.gpu_milli <= 0:
            return ""
        return "share" if self.is_sharing else f"{self.num_gpu}-gpu"


@dataclass(frozen=True, slots=True)
class Pod:
    """A pod in the arrival order: its name (tuned copies carry `-tuned-<k>`) and its request."""

    name: str
    shape: PodShape


@lru_cache(maxsize=4096)
def allowed_models(gpu_spec: str) -> frozenset[str]:
    """The models a `gpu_spec` admits (empty set: any); cached because specs repeat across pods."""
    return frozenset(m for m in gpu_spec.split("|") if m)


def model_allowed(model: str, gpu_spec: str) -> bool:
    """The simulator's GPU-type rule: an empty spec admits every model, else the model must be listed."""
    if not gpu_spec:
        return True
    return bool(model) and model in allowed_models(gpu_spec)


@dataclass(frozen=True, slots=True)
class ArrivalOrder:
    """One seed's experiment input: pods in arrival order and each node's tie-break rank.

    `ranks[i]` belongs to the i-th node of the node list; among equal scores the smallest rank wins.
    """

    seed: int
    pods: tuple[Pod, ...]
    ranks: tuple[int, ...]
