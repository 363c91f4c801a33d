"""Random: one feasible node uniformly at random (the simulator's PreScore `rand.Intn`), score 100 vs 0.

Python's `random.Random(seed)` cannot reproduce Go's stream, so runs compare in the 10-seed mean only.
The sharing pod's GPU is also uniform among the GPUs that fit (`gpuSelMethod: random`).
"""

from __future__ import annotations

import random

from extender.advice.replay.nodes import NodeState, random_gpu
from extender.advice.replay.scorer import RunContext
from extender.advice.replay.specs import PodShape


class RandomPick:
    """Scorer + NodePicker + GpuChooser, drawing from one RNG seeded per run."""

    name = "Random"

    def __init__(self) -> None:
        self._rng = random.Random(0)

    def prepare(self, context: RunContext) -> None:
        """Reseed, so a run is a pure function of its seed."""
        self._rng = random.Random(context.seed)

    def score(self, node: NodeState, pod: PodShape) -> int:
        """Every feasible node scores alike; `pick` decides."""
        return 0

    def pick(self, feasible: int) -> int:
        """Uniform index among the feasible nodes."""
        return self._rng.randrange(feasible)

    def choose_gpu(self, node: NodeState, pod: PodShape) -> int:
        """Uniform among the GPUs that fit."""
        return random_gpu(node, pod.gpu_milli, self._rng)
