"""Idle GPUs held for whole-GPU pods when they run short: a share that would take one waits.

Stranding (``stranding``) chooses *where* a pod goes; it cannot say that a pod should not go at all.
Yet as a sharing fleet fills up, that is what strands most: a share of 810 milli opening an idle GPU
keeps 190 milli that almost nothing asks for, and if the whole-GPU pods still to come need every idle
GPU left, one of them later finds none. On openb's default trace at 100 % arrived, 4.2 % of the GPUs
stay unallocated, nearly all of it in such remainders (970 GPUs keep 190 milli beside an 810 share),
while 173 one-GPU pods found no idle GPU (seed 42). The offline optimum leaves about 236 of those shares unplaced.

So a share is held off a node when the placement takes room a whole-GPU pod would use and that room
is more likely to be claimed than not worth its remainder. With the learned mix (``workload``) and the
fleet's totals (kept up to date by the caller, never worked out per request):

    w        = the whole-GPU pods' part of the GPU milli asked                        (the mix)
    c, r     = CPU and memory per GPU of the median whole-GPU pod                    (the mix)
    room(n)  = min(idle GPUs, ⌊CPU free / c⌋, ⌊memory free / r⌋)                     whole-GPU pods n holds
    I        = Σ_n room(n)
    W        = w × (free milli − milli of the GPU pods waiting) / 1000               whole GPUs still to come
    P        = Φ((W − I) / ½√W)                                                       an idle GPU gets claimed
    fill(g)  = g × (the shares of at most g milli among the GPU pods, by count)      what later fills a gap g
    held     ⟺ room(n after) < room(n) and P × 1000 > m + fill(1000 − m)             for a share of m milli

P × 1000 is what the room is worth to the whole-GPU pods; m + fill(1000 − m) what the share and
whatever later fills its gap make of it. On the default trace's learned mix (w = 0.71, the median
whole-GPU pod 11.3 cores and 47 GiB) an 810 share is held once P passes 0.81 (810 + 190 × 1.3 %), a 470
share from 0.59 and a 230 share from 0.45: the smaller the share, the less sure its gap is filled. Φ's
spread is half the Poisson spread of the whole-GPU pods to come (default trace, seeds 42–51: 3.93 %
unallocated; a quarter 3.94, the full spread 3.94, twice it 3.97). Room counts CPU and memory because
idle GPUs alone overstate it: counted by idle GPUs, a hold left 20–30 idle T4 and P100 GPUs unclaimed
on some seeds (nodes with too little CPU for another whole-GPU pod). A node whose CPU or memory already
keeps whole-GPU pods out loses no room to a share, so the share still goes there; a share that fits
beside another on a GPU in use takes no idle GPU at all.

"Waiting" counts because free milli overstates what is still to come by the GPU pods that found no
node: they are already here. In a cluster they are the pods pending after a filter passed no node.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from extender.cluster.shares import choose_gpu
from extender.cluster.state import NodeState
from extender.model.gpu_share import MILLI_PER_GPU
from extender.model.pods import PodRequest
from extender.scoring.verdict import Verdict
from extender.scoring.workload import Mix, TypicalPod

# Φ's spread, in Poisson standard deviations of the whole-GPU pods to come. Measured on the default
# trace (seeds 42–51): 0.5 → 3.93 % unallocated, 1 → 3.94, 2 → 3.97; 0.25 → 3.94.
_SPREAD = 0.5
# The rule assumes the pods to come fill the fleet (the replay's premise: arrivals up to its capacity).
# A live fleet far from full gives no such sign, and there W ≈ I makes P ≈ ½ even with room to spare
# (an empty fleet that has seen only whole-GPU pods would hold every share): nothing is held until the
# sharing GPUs are this far allocated (%).
FULL_FROM = 80

__all__ = [
    "FULL_FROM",
    "HELD_FOR",
    "Demand",
    "Fleet",
    "claimed",
    "demand",
    "fill",
    "hold",
    "hold_reason",
    "holds",
    "room",
    "share_milli",
    "takes_of",
    "takes_room",
]


@dataclass(frozen=True, slots=True)
class Demand:
    """What the learned mix says of the GPU pods to come."""

    whole_share: float  # w: of the GPU milli asked, the part whole-GPU pods ask
    cpu_per_gpu: int  # c: of the median whole-GPU pod
    memory_per_gpu: int  # r: MiB of node memory, of the median whole-GPU pod
    shares: tuple[tuple[int, float], ...]  # (milli, part of the GPU pods by count), for each share size


@dataclass(frozen=True, slots=True)
class Fleet:
    """The fleet's totals the rule reads: free milli of the sharing GPUs, whole-GPU room, waiting milli."""

    free_milli: int
    room: int
    waiting_milli: int = 0
    capacity_milli: int = 0  # of the sharing GPUs, allocated or not (0: unknown, no guard)


def _median(pairs: list[tuple[int, float]]) -> int:
    pairs.sort()
    half, seen = sum(p for _, p in pairs) / 2, 0.0
    for value, p in pairs:
        seen += p
        if seen >= half:
            return value
    return pairs[-1][0]


def demand(mix: Mix) -> Demand | None:
    """The mix's demand (remembered on it); None without whole-GPU pods or shares in milli to weigh."""
    key = "reserve demand"
    if key in mix.cache:
        found: Demand | None = mix.cache[key]
        return found
    # The mix weighs a k-GPU spec 1/k per pod (``workload``): p × k is proportional to its pod count.
    whole: list[tuple[TypicalPod, float]] = []
    shared: list[tuple[int, float]] = []  # (milli, pods)
    for p in mix.pods:
        milli = MILLI_PER_GPU if p.share is None else p.share.milli
        if not p.gpus or milli is None:  # no GPU, or a share in memory: its milli depends on the GPU
            continue
        if milli >= MILLI_PER_GPU:
            whole.append((p, p.probability * p.gpus))
        else:
            shared.append((milli, p.probability))
    whole_milli = sum(n * p.gpus * MILLI_PER_GPU for p, n in whole)
    share_milli = sum(n * milli for milli, n in shared)
    found = None
    if whole:
        pods = sum(n for _, n in whole) + sum(n for _, n in shared)
        sizes: dict[int, float] = {}
        for milli, n in shared:
            sizes[milli] = sizes.get(milli, 0.0) + n / pods
        found = Demand(
            whole_milli / (whole_milli + share_milli),
            _median([(p.cpu_milli // p.gpus, n) for p, n in whole]),
            _median([(p.memory_mib // p.gpus, n) for p, n in whole]),
            tuple(sorted(sizes.items())),
        )
    mix.cache[key] = found
    return found


def room(free: tuple[int, ...], cpu_free: int | None, memory_free: int | None, wants: Demand) -> int:
    """How many whole-GPU pods like the median one a node with this free milli per GPU, CPU and memory
    holds (unknown CPU or memory limits nothing)."""
    held = sum(1 for milli in free if milli >= MILLI_PER_GPU)
    if cpu_free is not None and wants.cpu_per_gpu > 0:
        held = min(held, max(0, cpu_free) // wants.cpu_per_gpu)
    if memory_free is not None and wants.memory_per_gpu > 0:
        held = min(held, max(0, memory_free) // wants.memory_per_gpu)
    return held


def claimed(fleet: Fleet, wants: Demand) -> float:
    """P: how likely the whole-GPU pods still to come claim one more idle GPU than the fleet now holds
    room for (0 when none are expected)."""
    allocated = fleet.capacity_milli - fleet.free_milli
    if fleet.capacity_milli > 0 and allocated * 100 < FULL_FROM * fleet.capacity_milli:
        return 0.0
    coming = wants.whole_share * max(0, fleet.free_milli - fleet.waiting_milli) / MILLI_PER_GPU
    if coming <= 0:
        return 0.0
    z = (coming - fleet.room) / (_SPREAD * math.sqrt(max(coming, 1.0)))
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def fill(wants: Demand, gap: int) -> float:
    """What later shares are expected to make of a gap of ``gap`` milli: the gap, times the part of the
    GPU pods small enough for it."""
    return gap * sum(part for milli, part in wants.shares if milli <= gap)


def holds(wants: Demand, fleet: Fleet, milli: int) -> bool:
    """Whether a share of ``milli`` that takes whole-GPU room is held off (the room is worth more)."""
    if milli >= MILLI_PER_GPU:
        return False
    return claimed(fleet, wants) * MILLI_PER_GPU > milli + fill(wants, MILLI_PER_GPU - milli)


def takes_room(
    free: tuple[int, ...], cpu_free: int | None, memory_free: int | None, asked: tuple[int, int, int], wants: Demand
) -> bool:
    """Whether a share (``asked``: its milli, CPU and memory) placed on this node, on the GPU the binders
    choose (``shares.choose_gpu``: best fit), leaves room for fewer whole-GPU pods than before."""
    milli, cpu, memory = asked
    gpu = choose_gpu(free, milli)
    if gpu < 0:
        return False
    after = tuple(room_ - milli if i == gpu else room_ for i, room_ in enumerate(free))
    cpu_after = None if cpu_free is None else cpu_free - cpu
    memory_after = None if memory_free is None else memory_free - memory
    return room(after, cpu_after, memory_after, wants) < room(free, cpu_free, memory_free, wants)


def share_milli(request: PodRequest) -> int | None:
    """The milli of one GPU a share asks, when it asks in milli (the convention the learned demand and
    the binders' best fit speak); None for any other pod, which the reserve never holds."""
    share = request.share
    if request.gpus != 1 or share is None or share.milli is None or share.milli >= MILLI_PER_GPU:
        return None
    return share.milli


Takes = Callable[[NodeState, tuple[int, int, int], Demand], bool]
HELD_FOR = "held for whole-GPU pods"  # how every hold's reason begins


def hold_reason(milli: int) -> str:
    """The words a node held off a share of ``milli`` is refused with (docs quote them: a test checks).
    Fixed words, no running figures: a reply made of them may be given again while the hold lasts."""
    return (
        f"{HELD_FOR}: this {milli}-milli share would take room that the whole-GPU pods "
        "still to come are likely to need; it waits until they have come or room is back"
    )


def hold(
    request: PodRequest,
    verdicts: list[Verdict],
    nodes: Mapping[str, NodeState],
    wants: Demand,
    fleet: Fleet,
    takes: Takes | None = None,
) -> tuple[list[Verdict], int]:
    """The verdicts with each node the share is held off turned into a refusal (resolvable: the pod
    waits, and may pass once whole-GPU pods have come or the fleet has room again), and how many.
    ``takes``: :func:`takes_of` or a remembering stand-in for it (the extender's ledger)."""
    milli = share_milli(request)
    if milli is None or not holds(wants, fleet, milli):
        return verdicts, 0
    reason = hold_reason(milli)
    asked = (milli, request.cpu_milli, request.memory_mib)
    takes = takes or takes_of
    out: list[Verdict] = []
    for verdict in verdicts:
        node = nodes.get(verdict.node) if verdict.fits else None
        out.append(Verdict(verdict.node, False, reason) if node and takes(node, asked, wants) else verdict)
    return out, sum(1 for new, old in zip(out, verdicts, strict=True) if new is not old)


def takes_of(node: NodeState, asked: tuple[int, int, int], wants: Demand) -> bool:
    """:func:`takes_room` for a node of the cluster model (a node without readable shares: never)."""
    shares = node.shares
    if shares is None or shares.problem:
        return False
    return takes_room(shares.free, node.cpu_free, node.memory_free, asked, wants)
