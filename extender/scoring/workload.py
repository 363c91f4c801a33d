"""The workload mix the advisor judges stranding against, learned from what it sees.

A live scheduler does not know the pods to come. The advisor counts every pod it judges (once per pod)
and every pod running in the cluster, by spec: CPU, GPU count, the share of each GPU (a whole GPU, a
milli share or a memory share) and the models it allows; memory is not part of a spec. The mix is every
spec seen with its share of the count (no cut of rare specs: on a small sample a cut drops exactly the
rare typed and multi-GPU pods that a placement must leave room for).

Re-working the mix after every pod would make every remembered verdict stale at once, so it is renewed
each time the count of pods seen doubles (1, 2, 4 … 2048), then every 2048 pods, and each renewal
has a new ``version``; memos key on it. Renewing more often was measured not to place better.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from extender.model.gpu_share import ShareRequest
from extender.model.pods import PodRequest

__all__ = ["NO_MIX", "Mix", "MixLearner", "TypicalPod", "learned_from", "spec_of"]

_FIRST_RENEWALS = frozenset(1 << n for n in range(11))  # 1, 2, 4 … 1024
_RENEW_EVERY = 2048


@dataclass(frozen=True, slots=True)
class TypicalPod:
    """One spec of the mix: its CPU, GPU count, share of each GPU (None: whole GPUs) and probability."""

    cpu_milli: int
    gpus: int
    share: ShareRequest | None
    probability: float

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


def _mix(version: int, counts: Counter[Spec]) -> Mix:
    total = sum(counts.values())
    ordered = sorted(counts.items(), key=lambda item: -item[1])  # stable: first seen first among equals
    return Mix(version, tuple(TypicalPod(cpu, gpus, share, n / total) for (cpu, gpus, share), n in ordered))


class MixLearner:
    """Counts pods by spec, each pod once (by its key: a uid, or a name in a replay), and renews the mix
    on the schedule above. Thread-safe: the HTTP edges and the cluster source both feed it."""

    def __init__(self, remember: int = 200_000) -> None:
        self._counts: Counter[Spec] = Counter()
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
            self._counts[spec_of(request)] += 1
            self._n = n = self._n + 1
            if n not in _FIRST_RENEWALS and n % _RENEW_EVERY:
                return False
            self.current = _mix(self.current.version + 1, self._counts)
            return True


def learned_from(pods: Iterable[tuple[Hashable, PodRequest]]) -> Mix:
    """The mix of these pods at once (the running pods of a snapshot, for explain)."""
    counts: Counter[Spec] = Counter(spec_of(request) for _, request in dict(pods).items())
    return _mix(1, counts) if counts else NO_MIX
