"""The 0–10 scores kube-scheduler sees, chosen so its pick is the advisor's pick.

kube-scheduler takes the node with the highest total score and breaks ties itself, but the extender's
scores are whole numbers 0–10 (MaxExtenderPriority), and the advisor ranks more finely: first by what a
placement strands (the stranding level, 0–100), then by the weighted blend of the other terms before
rounding. Two nodes can round to the same score yet differ in rank, so every node best by the
full-precision rank keeps its score (raised to 1 when it is 0 and another node passes), and every
other node that would reach it is lowered to one below. Scores below the best stay as they are. The
argmax on the wire is then exactly the advisor's set of best nodes, and kube-scheduler's own tie rule
picks among nodes the advisor finds equal.
"""

from __future__ import annotations

from dataclasses import replace

from extender.scoring.verdict import Verdict

__all__ = ["on_the_wire"]


def on_the_wire(verdicts: list[Verdict]) -> list[Verdict]:
    """The verdicts with scores adjusted as above (the same objects where nothing changes)."""
    best = max((v.rank for v in verdicts if v.fits), default=None)
    if best is None:
        return verdicts
    top = max(v.score for v in verdicts if v.fits and v.rank == best)
    if top == 0 and any(v.fits and v.rank != best for v in verdicts):
        top = 1
    out = verdicts
    for i, v in enumerate(verdicts):
        if not v.fits:
            continue
        wanted = top if v.rank == best else min(v.score, top - 1)
        if wanted != v.score:
            if out is verdicts:
                out = list(verdicts)
            out[i] = replace(v, score=wanted)
    return out
