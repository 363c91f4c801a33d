"""What a placement strands: FGD's fragmentation of a node against the learned workload mix, and its change.

For a node with free milli per GPU ``free``, free CPU ``c`` and free memory ``r``, each spec m of the
mix (``workload``) finds the node's GPUs either usable or stranded (Weng et al., "Beware of
Fragmentation", ATC'23, with the node's memory added: FGD looks at CPU alone, but a node whose memory
is used up strands its GPUs just as surely, and on the openb trace's nodes memory often runs out first):

    f(n, m) = free milli on GPUs too small for m      when m fits (model allowed, enough CPU and
                                                      memory, GPUs)
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
# (CPU class it needs, memory class it needs, milli per GPU, GPUs, model allowed, p)
_Entry = tuple[int, int, int, int, bool, float]


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
        cpus, memories = _thresholds(mix, "cpu"), _thresholds(mix, "memory")
        found = mix.cache[key] = tuple(
            (
                bisect_right(cpus, p.cpu_milli),
                bisect_right(memories, p.memory_mib),
                request_milli(p.share, memory_mib) if p.gpus else 0,
                p.gpus,
                p.allows(model),
                p.probability,
            )
            for p in mix.pods
        )
    return found


def _thresholds(mix: Mix, resource: str) -> list[int]:
    found = mix.cache.get(resource)
    if found is None:
        needs = (p.cpu_milli if resource == "cpu" else p.memory_mib for p in mix.pods)
        found = mix.cache[resource] = sorted(set(needs))
    return found


def _class(mix: Mix, resource: str, free: int | None) -> int:
    """Which CPU (or memory) needs of the mix the free CPU (memory) meets: all F looks at (unknown
    meets every one)."""
    thresholds = _thresholds(mix, resource)
    return len(thresholds) if free is None else bisect_right(thresholds, free)


def _amount(entries: tuple[_Entry, ...], cpu_class: int, memory_class: int, free: tuple[int, ...]) -> float:
    total = sum(free)
    out = 0.0
    for cpu, memory, milli, gpus, allowed, p in entries:
        if (
            not gpus
            or not allowed
            or cpu > cpu_class
            or memory > memory_class
            or sum(1 for g in free if g >= milli) < gpus
        ):
            out += p * total
        else:
            out += p * sum(g for g in free if g < milli)
    return out


def fragmentation(
    mix: Mix,
    model: str | None,
    memory_mib: int | None,
    cpu_free: int | None,
    free: tuple[int, ...],
    memory_free: int | None = None,
) -> float:
    """F of a (hypothetical) node state, remembered on the mix by everything it depends on
    (``memory_mib``: of each GPU; ``memory_free``: the node's free memory)."""
    cpu_class, memory_class = _class(mix, "cpu", cpu_free), _class(mix, "memory", memory_free)
    key = (model, memory_mib, cpu_class, memory_class, tuple(sorted(free)))
    found = mix.cache.get(key)
    if found is None:
        found = mix.cache[key] = _amount(_entries(mix, model, memory_mib), cpu_class, memory_class, free)
    return found


def class_key(
    mix: Mix,
    model: str | None,
    memory_mib: int | None,
    free: tuple[int, ...],
    node: tuple[int | None, int | None],
    asked: tuple[int, int],
) -> Hashable:
    """What :func:`strand`'s level depends on: nodes with equal keys get equal levels for that request
    (``node``: its free CPU and memory; ``asked``: the CPU and memory the request takes of them)."""
    (cpu, memory), (cpu_asked, memory_asked) = node, asked
    cpu_after = None if cpu is None else cpu - cpu_asked
    memory_after = None if memory is None else memory - memory_asked
    return (
        model,
        memory_mib,
        _class(mix, "cpu", cpu),
        _class(mix, "cpu", cpu_after),
        _class(mix, "memory", memory),
        _class(mix, "memory", memory_after),
        tuple(sorted(free)),
    )


def strand(
    mix: Mix,
    model: str | None,
    memory_mib: int | None,
    cpu_free: int | None,
    free: tuple[int, ...],
    request: PodRequest,
    memory_free: int | None = None,
) -> Strand | None:
    """The placement of ``request`` on a node with this free CPU, memory and GPUs; None when no GPU fits."""
    before = fragmentation(mix, model, memory_mib, cpu_free, free, memory_free)
    cpu_after = None if cpu_free is None else cpu_free - request.cpu_milli
    memory_after = None if memory_free is None else memory_free - request.memory_mib
    if not request.gpus:
        delta = before - fragmentation(mix, model, memory_mib, cpu_after, free, memory_after)
        return Strand((), free, delta, level(delta))
    milli = request_milli(request.share, memory_mib)
    taken = take_gpus(free, milli, request.gpus)
    if len(taken) < request.gpus:
        return None
    after = tuple(room - milli if i in taken else room for i, room in enumerate(free))
    delta = before - fragmentation(mix, model, memory_mib, cpu_after, after, memory_after)
    return Strand(taken, after, delta, level(delta))
