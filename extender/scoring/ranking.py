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

import zlib
from dataclasses import replace
from itertools import compress, repeat
from operator import and_, attrgetter, eq, ge, or_

from extender.scoring.verdict import Verdict

__all__ = ["crown", "on_the_wire"]

_FITS, _RANK, _SCORE = attrgetter("fits"), attrgetter("rank"), attrgetter("score")


def on_the_wire(verdicts: list[Verdict]) -> list[Verdict]:
    """The verdicts with scores adjusted as above (the same objects where nothing changes).

    Written as passes in C over the attributes (``map``/``compress``): at 5,000 candidates a Python
    loop over every verdict was a tenth of a new pod shape's first call. Only the few nodes whose
    score changes are visited one by one."""
    fits = list(map(_FITS, verdicts))
    passing = list(compress(verdicts, fits))
    if not passing:
        return verdicts
    ranks = list(map(_RANK, verdicts))
    best = max(compress(ranks, fits))
    is_best = list(map(eq, ranks, repeat(best)))
    top = max(compress(map(_SCORE, verdicts), map(and_, fits, is_best)))
    if top == 0 and not all(compress(is_best, fits)):
        top = 1
    # A score changes only where the node is best (raised or lowered to top) or reaches top unbest.
    touched = map(and_, fits, map(or_, is_best, map(ge, map(_SCORE, verdicts), repeat(top))))
    out = verdicts
    for i in compress(range(len(verdicts)), touched):
        v = verdicts[i]
        wanted = top if is_best[i] else min(v.score, top - 1)
        if wanted != v.score:
            if out is verdicts:
                out = list(verdicts)
            out[i] = replace(v, score=wanted)
    return out


def crown(verdicts: list[Verdict], pod_name: str) -> list[Verdict]:
    """After :func:`on_the_wire`: exactly one node keeps the top wire score.

    kube-scheduler breaks ties among its top totals by a uniform random draw, so a tier of nodes the
    advisor finds equal would be spread over by kube-scheduler's own score plugins (which favour free
    CPU and memory). One of them is named instead, stably per pod: the tier (passing nodes at the top
    score) sorted by node name, the one at ``zlib.crc32(pod_name) % len(tier)``. The rest of the tier
    is lowered by one; when the top is 0, the chosen one is raised to 1 instead."""
    passing = [i for i, v in enumerate(verdicts) if v.fits]
    if len(passing) < 2:
        return verdicts
    top = max(verdicts[i].score for i in passing)
    tier = sorted((i for i in passing if verdicts[i].score == top), key=lambda i: verdicts[i].node)
    if len(tier) < 2:
        return verdicts
    chosen = tier[zlib.crc32(pod_name.encode()) % len(tier)]
    out = list(verdicts)
    if top == 0:
        out[chosen] = replace(verdicts[chosen], score=1)
    else:
        for i in tier:
            if i != chosen:
                out[i] = replace(verdicts[i], score=top - 1)
    return out
