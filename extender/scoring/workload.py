"""The workload mix the advisor judges stranding against, learned from what it sees.

A live scheduler does not know the pods to come. The advisor counts every pod it judges (once per pod)
and every pod running in the cluster, by spec: CPU, GPU count, the share of each GPU (a whole GPU, a
milli share or a memory share) and the models it allows. The mix is the specs seen, each weighed by
its count, with three corrections (each measured on the openb traces):

- the rarest 1 % of pods is left out (the specs that cover the last 1 % of the count): a spec seen a
  handful of times is noise, and its odd CPU need makes every node that falls below it look stranded,
  which matters most where CPU runs short (cpu250). Below 100 pods nothing is cut, so the rare
  multi-GPU pods of a small sample keep their place;
- a typed spec (one naming GPU models) whose shape is among the rarest 5 % is left out too (below);
- a spec asking k > 1 GPUs counts 1/k per pod. Fragmentation already charges a placement all the free
  milli a k-GPU pod can no longer use, which grows with k; weighing it per pod as well made the
  advisor keep whole 8-GPU boxes idle at the cost of strands elsewhere (by k: more strands on the
  multigpu traces; by 1: more than FGD; by 1/k: fewer).

Each spec's share is then split over the node memory its pods asked (in proportion to their count), so
stranding sees a node whose memory runs out before its GPUs do: on the openb nodes (4–5 GiB per core)
pods asking 4+ GiB per core exhaust memory first, and neither FGD nor a CPU-only look counts the GPUs
left behind (measured: 0.16 points fewer GPUs stranded on the default trace). Which specs are kept is
decided on the specs themselves, before that split.

Re-working the mix after every pod would make every remembered verdict stale at once, so it is renewed
each time the count of pods seen doubles (1, 2, 4 … 2048), then every 2048 pods, and each renewal
has a new ``version``; memos key on it. Renewing more often was measured not to place better.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from extender.model.gpu_share import ShareRequest
from extender.model.pods import PodRequest

__all__ = ["NO_MIX", "Mix", "MixLearner", "TypicalPod", "learned_from", "spec_of"]

_FIRST_RENEWALS = frozenset(1 << n for n in range(11))  # 1, 2, 4 … 1024
_RENEW_EVERY = 2048
_COMMON_SHAPES = 0.95  # typed specs: kept when their shape is among the most common 95 % of pods
_COMMON_SPECS = 0.99  # every spec: kept when among the most common 99 % of pods
_Key = TypeVar("_Key", bound=Hashable)


@dataclass(frozen=True, slots=True)
class TypicalPod:
    """One spec of the mix: its CPU, GPU count, share of each GPU (None: whole GPUs) and probability."""

    cpu_milli: int
    gpus: int
    share: ShareRequest | None
    probability: float
    memory_mib: int = 0  # of the node's memory: a node without it strands the GPUs for this spec too

    def allows(self, model: str | None) -> bool:
        if self.share is None or not (self.share.models or self.share.excluded_models):
            return True
        return model is not None and self.share.allows(model)


@dataclass(frozen=True, eq=False)
class Mix:
    """One version of the learned mix. Compared by version, so it keys memos cheaply; ``cache`` holds
    what scoring worked out against this very mix (it lives and dies with the version)."""

    version: int
    pods: tuple[TypicalPod, ...]
    cache: dict[Hashable, Any] = field(default_factory=dict, repr=False)

    def __hash__(self) -> int:
        return hash((Mix, self.version))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mix) and other.version == self.version


Spec = tuple[int, int, ShareRequest | None]
NO_MIX = Mix(0, ())  # nothing learned yet: stranding is then neutral everywhere


def spec_of(request: PodRequest) -> Spec:
    """(CPU, GPU count, share without the field it was read from): equal specs strand alike."""
    share = request.share
    if share is not None:
        share = replace(share, source="") if share.milli != 1000 or share.models else None
    return request.cpu_milli, request.gpus, share


def _shape(spec: Spec) -> Hashable:
    """A spec without the GPU models it allows: what it asks, wherever it may go."""
    cpu, gpus, share = spec
    return cpu, gpus, None if share is None else replace(share, models=(), excluded_models=())


def _most_common(counts: Mapping[_Key, int], share: float) -> set[_Key]:
    """The most frequent keys that together cover ``share`` of the count (ties: first seen first)."""
    common: set[_Key] = set()
    covered, total = 0, sum(counts.values())
    for key, n in sorted(counts.items(), key=lambda item: -item[1]):  # stable: first seen first
        if covered >= share * total:
            break
        covered += n
        common.add(key)
    return common


def _mix(version: int, tally: Counter[tuple[Spec, int]]) -> Mix:
    """The specs kept as the module says, each with its weighed share: a typed spec (one naming GPU
    models) whose shape is among the rarest 5 % goes too: on a small sample such a spec is noise, and
    the models it names would weigh as if the cluster must keep them free for it (the gpuspec traces).
    ``tally`` counts pods by (spec, node memory asked)."""
    counts: Counter[Spec] = Counter()
    memory: dict[Spec, Counter[int]] = {}
    for (spec, memory_mib), n in tally.items():  # specs in the order first seen, as the cut's ties want
        counts[spec] += n
        memory.setdefault(spec, Counter())[memory_mib] += n
    shapes: Counter[Hashable] = Counter()
    for spec, n in counts.items():
        shapes[_shape(spec)] += n
    common_shapes = _most_common(shapes, _COMMON_SHAPES)
    common_specs = _most_common(counts, _COMMON_SPECS)
    weights = {
        s: n / max(1, s[1])
        for s, n in counts.items()
        if s in common_specs and (not _typed(s) or _shape(s) in common_shapes)
    }
    total = sum(weights.values())
    ordered = sorted(weights.items(), key=lambda item: -item[1])
    pods: list[TypicalPod] = []
    for spec, weight in ordered:
        cpu, gpus, share = spec
        # The spec's share split over the node memory its pods asked, in proportion to their count.
        for memory_mib, n in _by_count(memory[spec]):
            pods.append(TypicalPod(cpu, gpus, share, weight / total * n / counts[spec], memory_mib))
    return Mix(version, tuple(pods))


def _by_count(memory: Counter[int]) -> list[tuple[int, int]]:
    """A spec's memory figures, most common first (ties: the larger first), so the order is fixed."""
    return sorted(memory.items(), key=lambda item: (-item[1], -item[0]))


def _typed(spec: Spec) -> bool:
    share = spec[2]
    return share is not None and bool(share.models or share.excluded_models)


class MixLearner:
    """Counts pods by spec, each pod once (by its key: a uid, or a name in a replay), and renews the mix
    on the schedule above. Thread-safe: the HTTP edges and the cluster source both feed it."""

    def __init__(self, remember: int = 200_000) -> None:
        self._tally: Counter[tuple[Spec, int]] = Counter()  # pods by (spec, node memory asked)
        self._seen: dict[Hashable, None] = {}
        self._remember = remember
        self._n = 0
        self._lock = threading.Lock()
        self.current = Mix(0, ())

    @property
    def observed(self) -> int:
        return self._n

    def observe(self, key: Hashable, request: PodRequest) -> bool:
        """Count a pod (once per key); True when the mix was renewed, so verdicts may change."""
        with self._lock:
            if key in self._seen:
                return False
            if len(self._seen) >= self._remember:  # forget the oldest keys, never the counts
                for old in list(self._seen)[: self._remember // 2]:
                    del self._seen[old]
            self._seen[key] = None
            self._tally[(spec_of(request), request.memory_mib)] += 1
            self._n = n = self._n + 1
            if n not in _FIRST_RENEWALS and n % _RENEW_EVERY:
                return False
            self.current = _mix(self.current.version + 1, self._tally)
            return True

    def renew(self) -> None:
        """Renew the mix now from every pod counted so far, not at the next doubling: a whole look at a
        cluster has just been counted, and judging it against part of it would differ from explain."""
        with self._lock:
            self.current = _mix(self.current.version + 1, self._tally)


def learned_from(pods: Iterable[tuple[Hashable, PodRequest]]) -> Mix:
    """The mix of these pods at once (the running pods of a snapshot, for explain)."""
    tally = Counter((spec_of(request), request.memory_mib) for request in dict(pods).values())
    return _mix(1, tally) if tally else NO_MIX
