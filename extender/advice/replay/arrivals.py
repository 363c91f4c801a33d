"""Seeded arrival orders for traces without shipped ones, following the simulator's process.

The simulator (Go `math/rand`, seeded once) draws: one debug value; a shuffle of the name-sorted pods
(the arrival order); "tuning" to 1.3 x the cluster's GPU capacity; ten informer draws; a permutation
that gives each name-sorted node its tie-break rank. Python's `random.Random(seed)` follows the same
steps but cannot reproduce Go's stream, so such orders compare only in the 10-seed mean.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from extender.advice.replay.specs import MILLI, ArrivalOrder, NodeSpec, Pod

DEFAULT_TUNE_RATIO = 1.3
_INFORMER_DRAWS = 10  # rand.Float64 calls made by the simulator's informers before the node permutation


def tune(arrivals: list[Pod], by_name: Sequence[Pod], target: float, rng: random.Random) -> list[Pod]:
    """Append random copies (tune up) or remove random pods (tune down) towards `target` milli-GPU.

    Tune up stops at the first draw for which total + the copy's *per-GPU* milli would exceed the target
    (the simulator's quirk; the draw is dropped), while the total grows by the copy's full request.
    """
    total = sum(pod.shape.gpu_request for pod in arrivals)
    out = list(arrivals)
    if total < target:
        copies = 0
        while True:
            pod = by_name[rng.randrange(len(by_name))]
            if total + pod.shape.gpu_milli > target:
                break
            total += pod.shape.gpu_request
            out.append(Pod(f"{pod.name}-tuned-{copies}", pod.shape))
            copies += 1
    while total > target and out:
        removed = out.pop(rng.randrange(len(out)))
        total -= removed.shape.gpu_request
    return out


def node_ranks(nodes: Sequence[NodeSpec], rng: random.Random) -> tuple[int, ...]:
    """Rank of each node (file order) from a permutation over the name-sorted nodes."""
    perm = list(range(len(nodes)))
    rng.shuffle(perm)
    ranks = [0] * len(nodes)
    for position, index in enumerate(sorted(range(len(nodes)), key=lambda i: nodes[i].name)):
        ranks[index] = perm[position]
    return tuple(ranks)


def generate_order(
    pods: Sequence[Pod], nodes: Sequence[NodeSpec], seed: int, tune_ratio: float = DEFAULT_TUNE_RATIO
) -> ArrivalOrder:
    """One seed's arrival order and node ranks, drawn in the simulator's order with Python's RNG."""
    rng = random.Random(seed)
    rng.getrandbits(63)  # the simulator's first draw (a debug log argument), kept for the draw order
    by_name = sorted(pods, key=lambda pod: pod.name)
    arrivals = list(by_name)
    rng.shuffle(arrivals)
    capacity = sum(node.gpu_count for node in nodes) * MILLI
    arrivals = tune(arrivals, by_name, tune_ratio * capacity, rng)
    for _ in range(_INFORMER_DRAWS):
        rng.random()
    return ArrivalOrder(seed, tuple(arrivals), node_ranks(nodes, rng))
