"""What a placement strands: FGD's fragmentation of a node against the learned workload mix, and its change.

For a node with free milli per GPU ``free``, free CPU ``c`` and free memory ``r``, each spec m of the
mix (``workload``) finds the node's GPUs either usable or stranded (Weng et al., "Beware of
Fragmentation", ATC'23, with the node's memory added):

    k(n, m) = ⌊r / r_m⌋                                how many pods of m the node's memory holds
    f(n, m) = free milli on GPUs too small for m,      when m fits once (model allowed, c ≥ c_m,
              and on the fitting GPUs beyond the       k ≥ 1, gpus_m GPUs fit)
              k × gpus_m roomiest ones
            = all free milli                           otherwise (and for a CPU-only m)
    F(n)    = Σ_m p_m f(n, m)                          in milli-GPU
    Δ       = F(n) − F(n after the placement)          (> 0: the placement strands less than it uses)
    level   = int(100 × sigmoid(Δ / 1000))             FGD's own quantisation, 50 when F is unchanged

Memory, because FGD looks at CPU alone, but a node whose memory is used up strands its GPUs just as
surely, and on the openb nodes (4–5 GiB per core) memory often runs out first. And memory by how many
pods it holds, not by whether one more fits: a G2 node (48 GiB per GPU) keeping 96 GiB beside 4 idle
GPUs looked whole to the common 1-GPU pod asking 47 GiB, yet only 2 of those can ever come; counting
copies sees the other 2 GPUs stranded and sends a memory-hungry pod where it leaves fewer such GPUs.
Measured on the openb traces (seeds 42–51): default 4.63 → 4.28 % unallocated, and fewer on
multigpu50, gpushare100 and gpuspec33 too. Counting CPU copies the same way was measured and left out:
it sent untyped pods to the CPU-rich nodes of the models typed pods need (T4), 1.7 points more on
gpuspec33; CPU stays FGD's one-pod test.

The level is deliberately coarse (about one step per 40 milli near 0): measured on the openb trace,
finer keys (raw Δ, F after, best fit) strand *more*, because equal levels leave the choice to the
next key instead of to a noise of a few milli. The GPUs a pod takes inside the node are the ones the
cluster model predicts for a bound pod (``extender.cluster.shares``): a share goes on the least free GPU
that fits (best fit, as the Alibaba and Aliyun binders do; measured as good as trying every GPU), whole
GPUs on the lowest-index idle ones.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Hashable
from dataclasses import dataclass

from extender.cluster.shares import request_milli, take_gpus
from extender.model.pods import PodRequest
from extender.scoring.workload import Mix

__all__ = ["NEUTRAL_LEVEL", "Strand", "class_key", "copies", "level", "pods", "strand", "usable"]

NEUTRAL_LEVEL = 50  # int(100 × sigmoid(0)): the placement strands exactly what it uses
# (CPU class it needs, where its memory need is among the mix's (-1: none), milli per GPU, GPUs, model
# allowed, p)
_Entry = tuple[int, int, int, int, bool, float]
Copies = tuple[int, ...]  # per pod count k = 1 … GPUs, how many of the memory needs the room holds k pods of


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
        cpus, memories = _thresholds(mix, "cpu"), _memory_needs(mix)
        found = mix.cache[key] = tuple(
            (
                bisect_right(cpus, p.cpu_milli),
                bisect_left(memories, p.memory_mib) if p.memory_mib > 0 else -1,
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


def _memory_needs(mix: Mix) -> tuple[int, ...]:
    """The mix's distinct memory needs above 0, ascending (a need of 0 limits nothing)."""
    found = mix.cache.get("memory needs")
    if found is None:
        found = mix.cache["memory needs"] = tuple(n for n in _thresholds(mix, "memory") if n > 0)
    return found


def _class(mix: Mix, free: int | None) -> int:
    """Which CPU needs of the mix the free CPU meets: all F looks at (unknown meets every one)."""
    thresholds = _thresholds(mix, "cpu")
    return len(thresholds) if free is None else bisect_right(thresholds, free)


def copies(needs: tuple[int, ...], free: int | None, most: int) -> Copies:
    """For k = 1 … ``most`` (the node's GPUs: no spec takes more pods than that, so a larger count tells
    F nothing), how many of the needs (ascending) the free amount holds k pods of: those up to free // k.
    A need's pod count is then how many of these exceed its index (``pods``). A few bisections, not a
    division per need: the replay asks this for every node state it scores. Unknown holds ``most`` of all."""
    if free is None:
        return (len(needs),) * most
    return tuple(bisect_right(needs, free // k) for k in range(1, most + 1))


def pods(held: Copies, need: int) -> int:
    """How many pods asking the need at this index ``held`` (``copies``) says the room holds."""
    return sum(1 for count in held if count > need)


def usable(fitting: list[int], gpus: int, pods: int) -> int:
    """The free milli ``pods`` pods of ``gpus`` GPUs each can use of the GPUs that fit them (``fitting``):
    they take the roomiest; none when not even one pod comes."""
    if pods < 1 or len(fitting) < gpus:
        return 0
    return sum(sorted(fitting, reverse=True)[: pods * gpus])


def _amount(entries: tuple[_Entry, ...], cpu_class: int, memories: Copies, free: tuple[int, ...]) -> float:
    total = sum(free)
    out = 0.0
    for cpu, memory, milli, gpus, allowed, p in entries:
        if not gpus or not allowed or cpu > cpu_class:
            out += p * total
        else:
            fitting = [g for g in free if g >= milli]
            out += p * (total - usable(fitting, gpus, pods(memories, memory) if memory >= 0 else len(free)))
    return out


def _room(mix: Mix, cpu_free: int | None, memory_free: int | None, gpus: int) -> tuple[int, Copies]:
    return _class(mix, cpu_free), copies(_memory_needs(mix), memory_free, gpus)


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
    cpu_class, memories = _room(mix, cpu_free, memory_free, len(free))
    key = (model, memory_mib, cpu_class, memories, tuple(sorted(free)))
    found = mix.cache.get(key)
    if found is None:
        found = mix.cache[key] = _amount(_entries(mix, model, memory_mib), cpu_class, memories, free)
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
    gpus = len(free)
    return (
        model,
        memory_mib,
        _room(mix, cpu, memory, gpus),
        _room(mix, cpu_after, memory_after, gpus),
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
