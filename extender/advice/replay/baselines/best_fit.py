"""BestFit (simulator `best_fit_score.go`).

    raw   = int(100 * (1 - [0.5 (c - p_c)/128000 + 0.5 (G - p_g)/8000]))
    score = (raw - min) * 100 // (max - min)   over all feasible nodes (0 for all when max == min)

Min-max normalisation maps only the raw maximum to 100 (every smaller raw score lands at most at 99),
so it never changes which node wins; it is kept as a hook with `preserves_argmax = True`.
"""

from __future__ import annotations

from collections.abc import Sequence

from extender.advice.replay.baselines.limits import MAX_SCORE, MAX_SPEC_CPU, MAX_SPEC_GPU
from extender.advice.replay.nodes import NodeState
from extender.advice.replay.scorer import RunContext
from extender.advice.replay.specs import PodShape


def best_fit_raw(node: NodeState, pod: PodShape) -> int:
    """The raw score: the tighter the leftover (CPU and GPU, equally weighted), the higher."""
    leftover = 0.0
    leftover += (float(node.cpu_free) - float(pod.cpu_milli)) / MAX_SPEC_CPU * 0.5
    leftover += (float(node.gpu_free) - float(pod.gpu_request)) / MAX_SPEC_GPU * 0.5
    return int((1.0 - leftover) * float(MAX_SCORE))


def min_max_normalise(scores: Sequence[int]) -> list[int]:
    """The simulator's `NormalizeScore`: integer min-max to 0..100, all 0 when every score is equal."""
    if not scores:
        return []
    lowest, highest = min(scores), max(scores)
    if highest == lowest:
        return [0] * len(scores)
    return [(s - lowest) * MAX_SCORE // (highest - lowest) for s in scores]


class BestFit:
    """Scorer + Normalising; sharing pods use the least-free GPU that fits (`best`)."""

    name = "BestFit"
    preserves_argmax = True

    def prepare(self, context: RunContext) -> None:
        """Stateless."""

    def score(self, node: NodeState, pod: PodShape) -> int:
        """The raw score (see module docstring)."""
        return best_fit_raw(node, pod)

    def normalise(self, scores: Sequence[int]) -> list[int]:
        """Min-max over the feasible nodes."""
        return min_max_normalise(scores)
