"""What the engine asks of a scheduling policy: a pure integer score per (node state, pod shape).

Because `score` sees only an identity-free `NodeState` and a `PodShape`, equal inputs must give equal
scores; the engine relies on that to memoise and to re-score only nodes that changed. Optional hooks,
detected with `isinstance`, cover what some policies need beyond a per-node score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from extender.advice.replay.nodes import NodeState, best_fit_gpu
from extender.advice.replay.specs import NodeSpec, Pod, PodShape


@dataclass(frozen=True, slots=True)
class RunContext:
    """What a policy may look at before a run: the cluster, the original (untuned) pods, the seed."""

    nodes: tuple[NodeSpec, ...]
    original_pods: tuple[Pod, ...]
    seed: int


@runtime_checkable
class Scorer(Protocol):
    """A policy: higher score wins; ties go to the node with the smallest rank."""

    name: str

    def prepare(self, context: RunContext) -> None:
        """Called once before a run (e.g. FGD derives its target workload here)."""

    def score(self, node: NodeState, pod: PodShape) -> int:
        """Score of a feasible node for the pod; a pure function of its arguments."""
        ...


@runtime_checkable
class GpuChooser(Protocol):
    """Picks the GPU of a sharing pod on the chosen node (default: the least-free GPU that fits)."""

    def choose_gpu(self, node: NodeState, pod: PodShape) -> int:
        """Index of the GPU the sharing pod goes on."""
        ...


@runtime_checkable
class Normalising(Protocol):
    """A score-extension step over all feasible nodes' scores (e.g. BestFit's min-max)."""

    # True when the node(s) with the highest raw score are exactly the ones with the highest
    # normalised score; the engine then skips normalising, which changes no decision.
    preserves_argmax: bool

    def normalise(self, scores: Sequence[int]) -> list[int]:
        """Scores of all feasible nodes, normalised, in the same order."""
        ...


@runtime_checkable
class NodePicker(Protocol):
    """Chooses among the feasible nodes directly (Random's PreScore), instead of by score."""

    def pick(self, feasible: int) -> int:
        """Index, in rank order, of the chosen one among `feasible` nodes."""
        ...

    def missed(self) -> None:
        """No node is feasible for the pod (it is dropped)."""
        ...


@runtime_checkable
class Observer(Protocol):
    """Sees every pod as it arrives, before it is scheduled (e.g. a workload learned online)."""

    def observe(self, pod: Pod) -> bool:
        """Return True when scores may have changed, so the engine drops what it memoised."""
        ...


@runtime_checkable
class NamedTies(Protocol):
    """Breaks a tie among the best nodes as the live extender does (``extender.scoring.ranking.tie_order``:
    the smallest CRC-32 of the node's name), not by the run's ranks, so a replay makes the choice a real
    kube-scheduler makes with the printed profile."""

    names_break_ties: bool


@runtime_checkable
class Holding(Protocol):
    """Follows the fleet's totals and may hold a pod off a node it fits (the advisor's reserve,
    ``extender.scoring.reserve``): the engine then takes the best node that does not hold it; when every
    node holds it, the pod waits, for room or for ``hold_limit_s`` seconds at most (``waiting``)."""

    @property
    def hold_limit_s(self) -> float:
        """Seconds a pod every node holds waits at most; then it is placed as if nothing held it."""
        ...

    def fleet(self, states: Sequence[NodeState]) -> None:
        """The fleet before the first pod."""

    def moved(self, node: int, state: NodeState) -> None:
        """Node ``node`` is now in ``state``."""

    def waiting(self, pod: PodShape) -> None:
        """No node took this pod (in a cluster it would wait)."""

    def resumed(self, pod: PodShape) -> None:
        """A pod that waited was placed after all."""

    def holds(self, node: NodeState, pod: PodShape) -> bool:
        """Whether the pod is held off this node it fits."""
        ...


def gpu_for(scorer: Scorer, state: NodeState, pod: PodShape) -> int:
    """The GPU a share takes on ``state``: the scorer's choice if it makes one, else the best fit; -1 for
    whole-GPU pods (they take the lowest idle GPUs)."""
    if not pod.is_sharing:
        return -1
    if isinstance(scorer, GpuChooser):
        return scorer.choose_gpu(state, pod)
    return best_fit_gpu(state, pod.gpu_milli)
