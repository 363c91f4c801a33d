"""FGD's node fragmentation F(n) against a target workload (simulator `NodeGpuShareFragAmountScore`).

F(n) = sum_m p_m f(n, m): f = G (all free milli-GPU of the node) when m is CPU-only, its GPU type is
not allowed, fewer than num_gpu(m) GPUs have milli(m) free, or the node lacks m's CPU; otherwise f is
the free milli on GPUs too small for m. The simulator accumulates p_m * amount into seven category
buckets and sums the non-"satisfied" ones in a fixed order; that is reproduced exactly, because a
placement that leaves F mathematically unchanged must still score int(100 * sigmoid(0)) = 50 or 49
exactly as the float noise of that order makes it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from extender.advice.replay.nodes import NodeState
from extender.advice.replay.specs import model_allowed
from extender.advice.replay.workload import Workload

# Bucket indices of the simulator's FragAmount: Q1 lack both, Q2 lack GPU, Q3 satisfied,
# Q4 lack CPU, XL CPU-pod satisfied, XR CPU-pod lacks CPU, NA no access.
_Q1, _Q2, _Q3, _Q4, _XL, _XR, _NA = range(7)
# (cpu, milli, num_gpu, allowed-for-model, p) per typical pod, in workload order.
_Entry = tuple[int, int, int, bool, float]


def _bucket_sum(buckets: list[float]) -> float:
    """Sum of every bucket except Q3, in index order, as `FragAmountSumExceptQ3` does."""
    out = 0.0
    for index, value in enumerate(buckets):
        if index != _Q3:
            out += value
    return out


def frag_amount(cpu_free: int, gpus: tuple[int, ...], entries: tuple[_Entry, ...]) -> float:
    """F for a node with `cpu_free` CPU and `gpus` free milli, against precomputed workload entries."""
    buckets = [0.0] * 7
    total = sum(gpus)
    for cpu, milli, num, allowed, p in entries:
        if milli == 0:
            buckets[_XL if cpu_free >= cpu else _XR] += p * total
        elif not allowed:
            buckets[_NA] += p * total
        else:
            hostable = sum(1 for g in gpus if g >= milli) >= num
            if hostable and cpu_free >= cpu:
                small = sum(g for g in gpus if g < milli)
                buckets[_Q2] += p * small
                buckets[_Q3] += p * (total - small)
            elif cpu_free >= cpu:  # enough CPU, so the GPUs are what is lacking
                buckets[_Q2] += p * total
            else:
                buckets[_Q4 if hostable else _Q1] += p * total
    return _bucket_sum(buckets)


class FragModel:
    """F(n) for one workload, memoised on what F can depend on: model, which CPU thresholds the free
    CPU clears, and the multiset of free GPU milli (F never looks at GPU order or memory)."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self._thresholds = sorted({pod.cpu_milli for pod in workload.pods})
        self._entries: dict[str, tuple[_Entry, ...]] = {}
        self._memo: dict[tuple[str, int, tuple[int, ...]], float] = {}

    def _entries_for(self, model: str) -> tuple[_Entry, ...]:
        entries = self._entries.get(model)
        if entries is None:
            entries = tuple(
                (pod.cpu_milli, pod.gpu_milli, pod.num_gpu, model_allowed(model, pod.gpu_spec), pod.probability)
                for pod in self.workload.pods
            )
            self._entries[model] = entries
        return entries

    def of(self, model: str, cpu_free: int, gpus: tuple[int, ...]) -> float:
        """F of a (hypothetical) node state."""
        key = (model, bisect_right(self._thresholds, cpu_free), tuple(sorted(gpus)))
        value = self._memo.get(key)
        if value is None:
            value = frag_amount(cpu_free, gpus, self._entries_for(model))
            self._memo[key] = value
        return value

    def node(self, node: NodeState) -> float:
        """F of a node."""
        return self.of(node.model, node.cpu_free, node.gpus)


class FragTracker:
    """Cluster F summed over nodes, kept current by re-evaluating only the node that changed."""

    def __init__(self, states: Sequence[NodeState], workload: Workload | None) -> None:
        self._model = FragModel(workload) if workload is not None else None
        self._per_node = [self._model.node(s) for s in states] if self._model is not None else []
        self._total = sum(self._per_node)
        self.log: list[float] = []

    def update(self, node: int, state: NodeState) -> None:
        """A node changed."""
        if self._model is not None:
            value = self._model.node(state)
            self._total += value - self._per_node[node]
            self._per_node[node] = value

    def record(self) -> None:
        """Log the current total (0 when no workload was given)."""
        self.log.append(self._total)
