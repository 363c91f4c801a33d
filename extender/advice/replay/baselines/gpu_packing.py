"""GpuPacking (simulator `gpu_packing_score.go`): fill partly used GPUs, then used nodes, then idle ones.

    CPU-only pod:                                     0
    every GPU of the node free (n GPUs):              max(33 - n, n)
    the pod needs k fully free GPUs on a used node:   max(50 - k, 33)
    the pod fits on partly used GPUs g_i:             max(100 - (sum g_i*100//1000) // 10, 50)

GPUs are taken least-free first (stable by index), as the simulator sizes the request.
"""

from __future__ import annotations

from extender.advice.replay.baselines.limits import MAX_SCORE
from extender.advice.replay.nodes import NodeState
from extender.advice.replay.scorer import RunContext
from extender.advice.replay.specs import MILLI, PodShape


def gpu_packing_score(node: NodeState, pod: PodShape) -> int:
    """The table above."""
    if pod.gpu_request <= 0:
        return 0
    fully_free = node.gpus.count(MILLI)
    if fully_free == len(node.gpus):
        return max(MAX_SCORE // 3 - fully_free, fully_free)
    wanted = pod.num_gpu
    taken: list[int] = []
    for index in sorted(range(len(node.gpus)), key=node.gpus.__getitem__):
        if wanted == 0:
            break
        if pod.gpu_milli <= node.gpus[index]:
            wanted -= 1
            taken.append(index)
    if wanted != 0:
        return 0  # infeasible; the filter never lets this through
    fresh = sum(1 for index in taken if node.gpus[index] == MILLI)
    if fresh > 0:
        return max(MAX_SCORE // 2 - fresh, MAX_SCORE // 3)
    free_pct = sum(node.gpus[index] * 100 // MILLI for index in taken)
    return max(MAX_SCORE - free_pct // 10, MAX_SCORE // 2)


class GpuPacking:
    """Scorer; sharing pods use the least-free GPU that fits (`best`)."""

    name = "GpuPacking"

    def prepare(self, context: RunContext) -> None:
        """Stateless."""

    def score(self, node: NodeState, pod: PodShape) -> int:
        """See module docstring."""
        return gpu_packing_score(node, pod)
