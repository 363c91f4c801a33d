"""Random: one feasible node uniformly at random (the simulator's PreScore `rand.Intn`), score 100 vs 0.

The simulator draws its picks from the same Go stream that drew the arrival order, right after it
(`arrivals.stream_after_order`): one `Intn(feasible)` per scheduled pod over the feasible nodes in
rank order, one draw per fitting GPU for a sharing pod's GPU (reservoir sampling), and one when a pod
fits nowhere (kube-scheduler's preemption attempt draws the offset of its candidate search). With
these the published curve is reproduced exactly up to about 84 % arrived demand on default seed 42
and diverges after (a draw the simulator makes elsewhere late in the run, not identified), so Random
compares in the 10-seed mean only.
"""

from __future__ import annotations

from extender.advice.replay.arrivals import stream_after_order
from extender.advice.replay.go_random import GoRandom
from extender.advice.replay.nodes import NodeState, random_gpu
from extender.advice.replay.scorer import RunContext
from extender.advice.replay.specs import PodShape


class RandomPick:
    """Scorer + NodePicker + GpuChooser, drawing from the run's Go stream."""

    name = "Random"

    def __init__(self) -> None:
        self._rng = GoRandom(0)

    def prepare(self, context: RunContext) -> None:
        """The stream where the simulator's scheduling starts, so a run is a pure function of its seed."""
        self._rng = stream_after_order(context.original_pods, context.nodes, context.seed)

    def score(self, node: NodeState, pod: PodShape) -> int:
        """Every feasible node scores alike; `pick` decides."""
        return 0

    def pick(self, feasible: int) -> int:
        """Uniform index among the feasible nodes."""
        return self._rng.intn(feasible)

    def missed(self) -> None:
        """No node fits the pod: the preemption attempt's draw."""
        self._rng.int63()

    def choose_gpu(self, node: NodeState, pod: PodShape) -> int:
        """Uniform among the GPUs that fit."""
        return random_gpu(node, pod.gpu_milli, self._rng)
