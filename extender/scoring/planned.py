"""The node an applied defragmentation plan chose for a pod's owner, ranked first where it fits.

After ``gpu-advisor defrag --apply`` evicts a pod, its controller makes a new one, and that pod should go
where the plan said: the plan's later moves, and the room it made for a pending pod, count on it. The
advisor's own ranking may prefer another node by then (the plan judged each move on the cluster of its
time). So for a pod whose owner has an intent (``extender.cluster.defrag_intents``), the first planned
node that fits gets the top score and every other passing node that reaches it one below, as
``ranking`` sends any best node. A planned node the filter refused is passed over: a preference never
places a pod where it does not fit.
"""

from __future__ import annotations

from collections.abc import Sequence

from extender.scoring.ranking import Order, apply_order
from extender.scoring.verdict import Verdict

__all__ = ["prefer_planned"]


def prefer_planned(verdicts: list[Verdict], planned: Sequence[str]) -> list[Verdict]:
    """``verdicts`` as sent with the first fitting node of ``planned`` on top (the same list when none fits)."""
    where = {v.node: i for i, v in enumerate(verdicts)}
    first = next((where[n] for n in planned if n in where and verdicts[where[n]].fits), None)
    if first is None:
        return verdicts
    fits = [v.fits for v in verdicts]
    scores = [v.score for v in verdicts]
    passing = sum(fits)
    top = max(s for s, f in zip(scores, fits, strict=True) if f)
    if top == 0 and passing > 1:
        top = 1  # one below the top must still be a score (0 to 10)
    ranks = [v.rank for v in verdicts]
    return apply_order(verdicts, Order(fits, ranks, scores, passing, verdicts[first].rank, first, top))
