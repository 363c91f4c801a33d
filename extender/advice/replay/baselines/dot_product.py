"""DotProd (Tetris-style; simulator `dot_product_score.go`, dimExt `merge`, norm `max`).

    score = int(100 * (1 - (c/128000 * p_c/128000 + G/8000 * p_g/8000) / 2))

c, G: the node's free milli-CPU and total free milli-GPU; p_c, p_g: the pod's requests. The smallest
dot product of free x demand wins. Float operations follow the simulator's order.
"""

from __future__ import annotations

from extender.advice.replay.baselines.limits import MAX_SCORE, MAX_SPEC_CPU, MAX_SPEC_GPU
from extender.advice.replay.nodes import NodeState
from extender.advice.replay.scorer import RunContext
from extender.advice.replay.specs import PodShape


def dot_product_score(node: NodeState, pod: PodShape) -> int:
    """The formula above."""
    dot = 0.0
    dot += (float(node.cpu_free) / MAX_SPEC_CPU) * (float(pod.cpu_milli) / MAX_SPEC_CPU)
    dot += (float(node.gpu_free) / MAX_SPEC_GPU) * (float(pod.gpu_request) / MAX_SPEC_GPU)
    return int(float(MAX_SCORE) * (1 - dot / 2.0))


class DotProduct:
    """Scorer; sharing pods use the default least-free-GPU placement (`gpuSelMethod: best`)."""

    name = "DotProd"

    def prepare(self, context: RunContext) -> None:
        """Stateless."""

    def score(self, node: NodeState, pod: PodShape) -> int:
        """See module docstring."""
        return dot_product_score(node, pod)
