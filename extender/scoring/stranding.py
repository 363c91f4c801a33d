"""What a placement strands: FGD's fragmentation of a node against the learned workload mix, and its change.

For a node with free milli per GPU ``free`` and free CPU ``c``, each spec m of the mix (``workload``)
finds the node's GPUs either usable or stranded (Weng et al., "Beware of Fragmentation", ATC'23):

    f(n, m) = free milli on GPUs too small for m      when m fits (model allowed, enough CPU, GPUs)
            = all free milli                          otherwise (and for a CPU-only m)
    F(n)    = Σ_m p_m f(n, m)                         in milli-GPU
    Δ       = F(n) − F(n after the placement)         (> 0: the placement strands less than it uses)
    level   = int(100 × sigmoid(Δ / 1000))            FGD's own quantisation, 50 when F is unchanged

The level is deliberately coarse (about one step per 40 milli near 0): measured on the openb trace,
finer keys (raw Δ, F after, best fit) strand *more*, because equal levels leave the choice to the
next key instead of to a noise of a few milli. The GPUs a pod takes inside the node are the ones the
cluster model predicts for a bound pod (``extender.cluster.shares``): a share goes on the least free GPU
that fits (best fit, as the Alibaba and Aliyun binders do; measured as good as trying every GPU), whole
GPUs on the lowest-index idle ones.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Hashable
from dataclasses import dataclass

from extender.cluster.shares import request_milli, take_gpus
from extender.model.pods import PodRequest
from extender.scoring.workload import Mix

__all__ = ["NEUTRAL_LEVEL", "Strand", "class_key", "level", "strand"]

NEUTRAL_LEVEL = 50  # int(100 × sigmoid(0)): the placement strands exactly what it uses
_Entry = tuple[int, int, int, bool, float]  # (CPU class it needs, milli per GPU, GPUs, model allowed, p)


@dataclass(frozen=True, slots=True)
class Strand:
    """One placement on a node: the GPUs it takes, their free milli after, Δ and its level."""

    gpus: tuple[int, ...]
    free_after: tuple[int, ...]
    delta: float
    level: int


def level(delta: float) -> int:
    return int(100.0 / (1.0 + math.exp(-delta / 1000.0)))


def _entries(mix: Mix, model: str | None, memory_mib: int | None) -> tuple[_Entry, ...]:
    key = ("entries", model, memory_mib)
    found = mix.cache.get(key)
    if found is None:
        thresholds = _thresholds(mix)
        found = mix.cache[key] = tuple(
            (
                bisect_right(thresholds, p.cpu_milli),
                request_milli(p.share, memory_mib) if p.gpus else 0,
                p.gpus,
                p.allows(model),
                p.probability,
            )
            for p in mix.pods
        )
    return found


def _thresholds(mix: Mix) -> list[int]:
    found = mix.cache.get("cpu")
    if found is None:
        found = mix.cache["cpu"] = sorted({p.cpu_milli for p in mix.pods})
    return found


def _cpu_class(mix: Mix, cpu_free: int | None) -> int:
    """Which CPU needs of the mix the free CPU meets: all F looks at (unknown CPU meets every one)."""
    thresholds = _thresholds(mix)
    return len(thresholds) if cpu_free is None else bisect_right(thresholds, cpu_free)


def _amount(entries: tuple[_Entry, ...], cpu_class: int, free: tuple[int, ...]) -> float:
    total = sum(free)
    out = 0.0
    for needs, milli, gpus, allowed, p in entries:
        if not gpus or not allowed or needs > cpu_class or sum(1 for g in free if g >= milli) < gpus:
            out += p * total
        else:
            out += p * sum(g for g in free if g < milli)
    return out


def fragmentation(
    mix: Mix, model: str | None, memory_mib: int | None, cpu_free: int | None, free: tuple[int, ...]
) -> float:
    """F of a (hypothetical) node state, remembered on the mix by everything it depends on."""
    cpu_class = _cpu_class(mix, cpu_free)
    key = (model, memory_mib, cpu_class, tuple(sorted(free)))
    found = mix.cache.get(key)
    if found is None:
        found = mix.cache[key] = _amount(_entries(mix, model, memory_mib), cpu_class, free)
    return found


def class_key(
    mix: Mix, model: str | None, memory_mib: int | None, cpu_free: int | None, cpu_asked: int, free: tuple[int, ...]
) -> Hashable:
    """What :func:`strand`'s level depends on: nodes with equal keys get equal levels for that request."""
    after = None if cpu_free is None else cpu_free - cpu_asked
    return (model, memory_mib, _cpu_class(mix, cpu_free), _cpu_class(mix, after), tuple(sorted(free)))


def strand(
    mix: Mix,
    model: str | None,
    memory_mib: int | None,
    cpu_free: int | None,
    free: tuple[int, ...],
    request: PodRequest,
) -> Strand | None:
    """The placement of ``request`` on a node with this free CPU and GPUs; None when no GPU fits it."""
    before = fragmentation(mix, model, memory_mib, cpu_free, free)
    cpu_after = None if cpu_free is None else cpu_free - request.cpu_milli
    if not request.gpus:
        delta = before - fragmentation(mix, model, memory_mib, cpu_after, free)
        return Strand((), free, delta, level(delta))
    milli = request_milli(request.share, memory_mib)
    taken = take_gpus(free, milli, request.gpus)
    if len(taken) < request.gpus:
        return None
    after = tuple(room - milli if i in taken else room for i, room in enumerate(free))
    delta = before - fragmentation(mix, model, memory_mib, cpu_after, after)
    return Strand(taken, after, delta, level(delta))
