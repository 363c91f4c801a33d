"""How far moving pods can lower the replay's stranding at all: the least unallocated GPU % at 100 % arrived
that any set of moves reaches, against what the replay reaches without moves.

    pip install scipy    # HiGHS, through scipy.optimize.milp: the exact packings below
    python benchmarks/defrag_bound.py [--trace default] [--seeds 42-51]

A move relocates a pod; it never unplaces one. So the bound takes every share (a one-GPU pod asking less
than a whole GPU) that the advisor placed without moves by the time demand first reaches 100 % of the GPUs
as placed with moves too (the replay with moves places as many or more of nearly every size), and the
cluster's free milli is at least what the shares' GPUs leave free: 1,000 milli per GPU that holds a share,
less the shares' milli. The least that can be over all packings of those shares (and of
any other share that had arrived: one more may fill a gap) is an exact integer program over GPU fills (the
multisets of share sizes that fit in 1,000 milli), solved here. CPU, memory and GPU models are left out,
so a real set of moves, which must respect them, does no better: the figure is a floor, whatever the
budget and however the moves are chosen.

Reads the openb trace from $GPU_ADVISOR_TRACES (or ``shared/traces`` beside the repository), each seed's
arrival order drawn as ``gpu-advisor replay`` draws it without ``--orders``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # keep this folder's scripts (benchmarks/extender.py) from shadowing the packages

import argparse
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from extender.advice.replay import openb
from extender.advice.replay.metrics import alloc_curve
from extender.advice.replay.run import published_workset, replay_one
from extender.advice.replay.specs import MILLI
from gpu_advisor.cli.replay import parse_seeds

TARGET = 3.70  # issue "Give stranded GPUs back": unallocated at 100 % arrived, 1 move per 100 arrivals


@dataclass(frozen=True)
class Shares:
    """Share sizes (milli) → how many: placed by the replay without moves, and every one arrived."""

    placed: Counter[int]
    arrived: Counter[int]


def shares_at_full(trace: str, seed: int) -> tuple[float, Shares, int]:
    """(unallocated % at 100 % arrived without moves, the shares then, the cluster's GPUs)."""
    workset = published_workset(openb.traces_dir(), trace, None)
    result = replay_one(workset, "advisor", seed)
    full = next((i for i, arrived in enumerate(result.arrived) if arrived >= result.capacity), None)
    if full is None:
        raise openb.ReplayInputError(f"{trace}: its arrivals never ask for 100 % of the GPUs")
    placed: Counter[int] = Counter()
    arrived: Counter[int] = Counter()
    for pod, node in zip(workset.order(seed).pods[: full + 1], result.placements, strict=False):
        shape = pod.shape
        if shape.num_gpu == 1 and 0 < shape.gpu_milli < MILLI:
            arrived[shape.gpu_milli] += 1
            placed[shape.gpu_milli] += node >= 0
    at_100 = alloc_curve(result)[100]
    assert at_100 is not None
    return round(100.0 - at_100, 2), Shares(placed, arrived), result.capacity // MILLI


def fills(sizes: Sequence[int], most: Sequence[int]) -> list[tuple[int, ...]]:
    """Every non-empty multiset of ``sizes`` (at most ``most`` of each) that fits one GPU, as counts."""
    found: list[tuple[int, ...]] = []

    def extend(i: int, room: int, counts: list[int]) -> None:
        if i == len(sizes):
            if any(counts):
                found.append(tuple(counts))
            return
        for n in range(min(most[i], room // sizes[i]) + 1):
            extend(i + 1, room - n * sizes[i], [*counts, n])

    extend(0, MILLI, [])
    return found


def least_waste(shares: Shares) -> float:
    """The least free milli (in GPUs) that the GPUs holding shares can leave: every placed share packed,
    and any other arrived one too where that helps."""
    try:
        import numpy as np
        from scipy.optimize import LinearConstraint, milp
    except ImportError:
        raise SystemExit("this bound needs scipy (HiGHS): pip install scipy") from None
    sizes = sorted(shares.arrived, reverse=True)
    low = [shares.placed[s] for s in sizes]
    high = [shares.arrived[s] for s in sizes]
    patterns = fills(sizes, high)
    counts = np.array(patterns).T
    waste = np.array([MILLI - sum(n * s for n, s in zip(p, sizes, strict=True)) for p in patterns])
    answer = milp(
        c=waste,
        constraints=LinearConstraint(counts, lb=np.array(low), ub=np.array(high)),
        integrality=np.ones(len(patterns)),
    )
    if answer.status != 0:
        raise SystemExit(f"the packing was not solved to optimality: {answer.message}")
    return float(answer.fun) / MILLI


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trace", default="default", help="a published trace (default: default)")
    parser.add_argument("--seeds", type=parse_seeds, default=parse_seeds("42-51"))
    args = parser.parse_args()
    if not (openb.traces_dir() / "openb" / openb.NODE_LIST).is_file():
        print(f"no trace folder at {openb.traces_dir()}; set {openb.TRACES_ENV}", file=sys.stderr)
        return 2
    rows: list[tuple[float, float]] = []
    for seed in args.seeds:
        try:
            without, shares, gpus = shares_at_full(args.trace, seed)
        except openb.ReplayInputError as exc:  # a trace not in the folder, or one that never fills the GPUs
            print(exc, file=sys.stderr)
            return 2
        if not rows:
            print("| seed | no moves | least with any moves | at most given back |\n|---:|---:|---:|---:|")
        floor = 100.0 * least_waste(shares) / gpus
        rows.append((without, floor))
        print(f"| {seed} | {without:.2f} % | {floor:.2f} % | {(without - floor) * gpus / 100:.0f} GPUs |", flush=True)
    without, floor = (statistics.fmean(column) for column in zip(*rows, strict=True))
    print(f"| mean | {without:.2f} % | {floor:.2f} % | |")
    share = (without - TARGET) / (without - floor) if without > floor else float("inf")
    print(f"\n{TARGET:.2f} % asks {100 * share:.0f} % of the most that moves could give back at all.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
