"""FGD's target workload: the "typical pods" distribution (simulator `GetTypicalPods`).

Pods are counted per spec (cpu milli, per-GPU milli, GPU count, gpu_spec; memory is not part of it),
specs sorted by count descending (ties: the larger spec first), and the top specs kept until their
cumulative count reaches the threshold (95 %), then renormalised. The float arithmetic follows the
simulator step by step because FGD truncates a sigmoid of differences of these sums.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from extender.advice.replay.specs import PodShape

DEFAULT_THRESHOLD_PCT = 95.0
SpecKey = tuple[int, int, int, str]


@dataclass(frozen=True, slots=True)
class TypicalPod:
    """One kept spec and its probability p_m."""

    cpu_milli: int
    gpu_milli: int
    num_gpu: int
    gpu_spec: str
    probability: float


@dataclass(frozen=True, slots=True)
class Workload:
    """The distribution M, in the simulator's order (which fixes the float summation order)."""

    pods: tuple[TypicalPod, ...]
    coverage: float  # share of all counted pods that the kept specs account for


def spec_key(shape: PodShape) -> SpecKey:
    """The simulator's `PodResource`: memory is not part of a spec."""
    return (shape.cpu_milli, shape.gpu_milli if shape.num_gpu > 0 else 0, shape.num_gpu, shape.gpu_spec)


def workload_from_counts(counts: Counter[SpecKey], threshold_pct: float = DEFAULT_THRESHOLD_PCT) -> Workload:
    """Keep the most frequent specs until they cover `threshold_pct` of the pods, then renormalise."""
    if not counts:
        return Workload((), 0.0)
    total = float(sum(counts.values()))
    ordered = sorted(counts.items(), key=lambda item: (item[1], item[0]), reverse=True)
    expected = threshold_pct * total / 100.0
    kept = 0
    cumulative = 0.0
    while cumulative < expected and kept < len(ordered):
        cumulative += ordered[kept][1]
        kept += 1
    shares = [count / total for _, count in ordered[:kept]]
    if kept < len(ordered):
        # Renormalised as the simulator does it: share / (cumulative / total), not count / cumulative.
        shares = [share / (cumulative / total) for share in shares]
    pods = tuple(
        TypicalPod(key[0], key[1], key[2], key[3], p) for (key, _), p in zip(ordered[:kept], shares, strict=True)
    )
    return Workload(pods, cumulative / total)


def typical_pods(shapes: Iterable[PodShape], threshold_pct: float = DEFAULT_THRESHOLD_PCT) -> Workload:
    """The fixed target workload of a trace: every pod of the original (untuned) list counted once."""
    return workload_from_counts(Counter(spec_key(shape) for shape in shapes), threshold_pct)


class OnlineWorkload:
    """The same distribution learned from the arrivals seen so far: feed pods one by one, read `current`.

    Recomputed lazily, only after the counts changed, so reading it after every pod stays cheap.
    """

    def __init__(self, threshold_pct: float = DEFAULT_THRESHOLD_PCT) -> None:
        self._threshold = threshold_pct
        self._counts: Counter[SpecKey] = Counter()
        self._current: Workload | None = Workload((), 0.0)

    @property
    def seen(self) -> int:
        """How many pods have been observed."""
        return sum(self._counts.values())

    def observe(self, shape: PodShape) -> None:
        """Count one arriving pod."""
        self._counts[spec_key(shape)] += 1
        self._current = None

    def current(self) -> Workload:
        """The typical-pod distribution of everything observed so far (empty before the first pod)."""
        if self._current is None:
            self._current = workload_from_counts(self._counts, self._threshold)
        return self._current
