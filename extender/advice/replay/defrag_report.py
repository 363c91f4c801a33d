"""A policy with moves beside the same policy without: unallocated GPU %, moves made and GPUs given back.

For each ``NAME+defragB`` of a sweep whose ``NAME`` ran too (same seeds, same orders): the mean
unallocated % at 100 % arrived with and without moves, the moves and the GPUs given back per run, and
the bin from 50 % to 130 % arrived where the moves did worst (unallocated with − without, > 0: worse).
"""

from __future__ import annotations

import statistics

from extender.advice.replay.moves import split_defrag
from extender.advice.replay.specs import MILLI
from extender.advice.replay.sweep import Sweep

__all__ = ["format_defrag", "worst_bin"]

_BINS = range(50, 131)


def _mean_alloc(sweep: Sweep, policy: str, x: int) -> float | None:
    values = [v for run in sweep.curves(policy) if (v := run.alloc[x]) is not None]
    return statistics.fmean(values) if values else None


def worst_bin(sweep: Sweep, with_moves: str, without: str) -> tuple[int, float] | None:
    """(X, unallocated % with moves − without) at the X in 50..130 where moves did worst; None: no bin."""
    worst: tuple[int, float] | None = None
    for x in _BINS:
        moved, kept = _mean_alloc(sweep, with_moves, x), _mean_alloc(sweep, without, x)
        if moved is None or kept is None:
            continue
        gap = round(kept - moved, 2)  # unallocated is 100 − alloc: (100 − moved) − (100 − kept)
        if worst is None or gap > worst[1]:
            worst = (x, gap)
    return worst


def format_defrag(sweep: Sweep) -> str | None:
    """One line per policy with moves whose move-less twin ran too; None when there is none."""
    lines = []
    for policy in sweep.policies:
        base, budget = split_defrag(policy)
        if budget <= 0 or base not in sweep.policies:
            continue
        runs = sweep.curves(policy)
        at_100 = [_mean_alloc(sweep, p, 100) for p in (policy, base)]
        unallocated = " vs ".join("n/a" if a is None else f"{100 - a:.2f} %" for a in at_100)
        moves = sum(r.moves for r in runs) / len(runs)
        back = sum(r.given_back for r in runs) / len(runs) / MILLI
        worst = worst_bin(sweep, policy, base)
        worst_text = "n/a" if worst is None else f"{worst[1]:+.2f} points at {worst[0]} %"
        lines.append(
            f"{policy}: unallocated at 100 % arrived {unallocated} ({base}); {moves:.1f} moves and "
            f"{back:.1f} GPUs given back per run; worst bin 50-130 %: {worst_text}"
        )
    return "\n".join(lines) if lines else None
