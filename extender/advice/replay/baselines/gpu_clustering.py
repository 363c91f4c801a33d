"""GpuClustering (simulator `gpu_clustering_score.go`): keep pods of one kind together.

tag   = "share" (fraction of one GPU) or "<k>-gpu"; CPU-only pods score 0
base  = 25 * (8000 - G) // 8000
score = base + 75  if the node hosts only GPU pods of the pod's tag
        base + 50  if it hosts the pod's tag among others
        base + 25  if it hosts no GPU pod
        base       otherwise
"""

from __future__ import annotations

from extender.advice.replay.baselines.limits import MAX_SCORE, MAX_SPEC_GPU
from extender.advice.replay.nodes import NodeState
from extender.advice.replay.scorer import RunContext
from extender.advice.replay.specs import PodShape


def gpu_clustering_score(node: NodeState, pod: PodShape) -> int:
    """The table above."""
    tag = pod.gpu_tag
    if not tag:
        return 0
    base = MAX_SCORE // 4 * (MAX_SPEC_GPU - node.gpu_free) // MAX_SPEC_GPU
    if tag in node.tags:
        return base + (MAX_SCORE * 3 // 4 if len(node.tags) == 1 else MAX_SCORE * 2 // 4)
    return base + (MAX_SCORE // 4 if not node.tags else 0)


class GpuClustering:
    """Scorer; sharing pods use the least-free GPU that fits (`best`)."""

    name = "GpuClustering"

    def prepare(self, context: RunContext) -> None:
        """Stateless."""

    def score(self, node: NodeState, pod: PodShape) -> int:
        """See module docstring."""
        return gpu_clustering_score(node, pod)
