"""Seeded arrival orders for traces without shipped ones: the very orders the simulator draws.

The simulator (Go `math/rand`, seeded once) draws: one debug value; a shuffle of the name-sorted pods
(the arrival order); "tuning" to 1.3 x the cluster's GPU capacity; ten informer draws; a permutation
that gives each name-sorted node its tie-break rank. The same steps over the same stream
(`go_random`) give the paper's own orders for every seed of every trace, so a replay compares with
its published runs seed by seed (the shipped `fgd-order` files are reproduced exactly; a test pins it).
"""

from __future__ import annotations

from collections.abc import Sequence

from extender.advice.replay.go_random import GoRandom
from extender.advice.replay.specs import MILLI, ArrivalOrder, NodeSpec, Pod

DEFAULT_TUNE_RATIO = 1.3
_INFORMER_DRAWS = 10  # rand.Float64 calls made by the simulator's informers before the node permutation


def tune(arrivals: list[Pod], by_name: Sequence[Pod], target: float, rng: GoRandom) -> list[Pod]:
    """Append random copies (tune up) or remove random pods (tune down) towards `target` milli-GPU.

    Tune up stops at the first draw for which total + the copy's *per-GPU* milli would exceed the target
    (the simulator's quirk; the draw is dropped), while the total grows by the copy's full request, so
    the last copy of a multi-GPU pod can end above the target: it stays (one or the other, never both;
    seed 45 of the default trace shows it).
    """
    total = sum(pod.shape.gpu_request for pod in arrivals)
    out = list(arrivals)
    if total < target:
        copies = 0
        while True:
            pod = by_name[rng.intn(len(by_name))]
            if total + pod.shape.gpu_milli > target:
                return out
            total += pod.shape.gpu_request
            out.append(Pod(f"{pod.name}-tuned-{copies}", pod.shape))
            copies += 1
    while total > target and out:
        removed = out.pop(rng.intn(len(out)))
        total -= removed.shape.gpu_request
    return out


def node_ranks(nodes: Sequence[NodeSpec], rng: GoRandom) -> tuple[int, ...]:
    """Rank of each node (file order): the name-sorted node i is renamed `%04d-<name>` with perm[i]."""
    perm = rng.perm(len(nodes))
    ranks = [0] * len(nodes)
    for position, index in enumerate(sorted(range(len(nodes)), key=lambda i: nodes[i].name)):
        ranks[index] = perm[position]
    return tuple(ranks)


def generate_order(
    pods: Sequence[Pod], nodes: Sequence[NodeSpec], seed: int, tune_ratio: float = DEFAULT_TUNE_RATIO
) -> ArrivalOrder:
    """One seed's arrival order and node ranks, drawn as the simulator draws them."""
    return drawn(pods, nodes, seed, tune_ratio)[0]


def stream_after_order(pods: Sequence[Pod], nodes: Sequence[NodeSpec], seed: int) -> GoRandom:
    """The seed's stream where scheduling starts: what Random's picks draw from."""
    return drawn(pods, nodes, seed)[1]


def drawn(
    pods: Sequence[Pod], nodes: Sequence[NodeSpec], seed: int, tune_ratio: float = DEFAULT_TUNE_RATIO
) -> tuple[ArrivalOrder, GoRandom]:
    """The order and ranks, and the stream after drawing them."""
    rng = GoRandom(seed)
    rng.int63()  # the simulator's first draw (`rand.Int()`, a debug log argument), kept for the draw order
    by_name = sorted(pods, key=lambda pod: pod.name)
    arrivals = list(by_name)
    rng.shuffle(arrivals)
    capacity = sum(node.gpu_count for node in nodes) * MILLI
    arrivals = tune(arrivals, by_name, tune_ratio * capacity, rng)
    for _ in range(_INFORMER_DRAWS):
        rng.float64()
    return ArrivalOrder(seed, tuple(arrivals), node_ranks(nodes, rng)), rng
