"""FGD, fragmentation gradient descent (simulator `fgd_score.go`, `pkg/utils/frag.go`).

    F(n)  = sum_m p_m f(n, m)                  (see `fragmentation.py`; M = typical pods)
    score = int(100 * sigmoid((F(n) - F(n after placing the pod)) / 1000))

A sharing pod is tried on every GPU that fits and the best score kept (that GPU, lowest index on
ties, is also where it goes); other pods take GPUs as the simulator's `Sub` does. The score is not
normalised. The target workload is the typical-pod distribution of the original, untuned trace.
"""

from __future__ import annotations

import math

from extender.advice.replay.baselines.limits import MAX_SCORE
from extender.advice.replay.fragmentation import FragModel
from extender.advice.replay.nodes import NodeState, subtract_packed
from extender.advice.replay.scorer import RunContext
from extender.advice.replay.specs import PodShape
from extender.advice.replay.workload import Workload, typical_pods


def sigmoid(x: float) -> float:
    """The simulator's logistic function."""
    return 1.0 / (1.0 + math.exp(-x))


def frag_score(before: float, after: float) -> int:
    """int(100 * sigmoid(drop / 1000)): 50 when F is unchanged, above when the placement lowers it."""
    return int(sigmoid((before - after) / 1000) * float(MAX_SCORE))


def per_gpu_scores(model: FragModel, node: NodeState, pod: PodShape) -> list[tuple[int, int]]:
    """(GPU index, score) for each GPU a sharing pod fits on, in index order."""
    before = model.node(node)
    cpu_after = node.cpu_free - pod.cpu_milli
    by_free: dict[int, int] = {}  # equal free milli gives an equal after-state multiset
    out = []
    for index, free in enumerate(node.gpus):
        if free < pod.gpu_milli:
            continue
        if free not in by_free:
            gpus = (*node.gpus[:index], free - pod.gpu_milli, *node.gpus[index + 1 :])
            by_free[free] = frag_score(before, model.of(node.model, cpu_after, gpus))
        out.append((index, by_free[free]))
    return out


def best_gpu(model: FragModel, node: NodeState, pod: PodShape) -> tuple[int, int]:
    """(score, GPU index) of the best GPU for a sharing pod; the first one wins ties."""
    best = (-1, -1)
    for index, score in per_gpu_scores(model, node, pod):
        if best[1] < 0 or score > best[0]:
            best = (score, index)
    return best


class Fgd:
    """Scorer + GpuChooser."""

    name = "FGD"

    def __init__(self, workload: Workload | None = None) -> None:
        self._fixed = workload
        self._model: FragModel | None = FragModel(workload) if workload is not None else None

    @property
    def model(self) -> FragModel:
        """The fragmentation model in use (after `prepare`)."""
        if self._model is None:
            raise RuntimeError("FGD scorer used before prepare()")
        return self._model

    def prepare(self, context: RunContext) -> None:
        """Target workload: the typical pods of the original trace, unless one was given."""
        if self._fixed is None:
            self._model = FragModel(typical_pods(pod.shape for pod in context.original_pods))

    def score(self, node: NodeState, pod: PodShape) -> int:
        """See module docstring."""
        model = self.model
        if pod.is_sharing:
            return best_gpu(model, node, pod)[0]
        after = subtract_packed(node, pod) if pod.num_gpu > 0 else node.gpus
        return frag_score(model.node(node), model.of(node.model, node.cpu_free - pod.cpu_milli, after))

    def choose_gpu(self, node: NodeState, pod: PodShape) -> int:
        """The GPU whose use lowers F the most."""
        return best_gpu(self.model, node, pod)[1]
