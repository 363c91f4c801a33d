"""The 0–10 scores kube-scheduler sees, chosen so its pick is the advisor's pick.

kube-scheduler takes the node with the highest total score and breaks ties itself, but the extender's
scores are whole numbers 0–10 (MaxExtenderPriority), and the advisor ranks more finely: first by what a
placement strands (the stranding level, 0–100), then by the weighted blend of the other terms before
rounding. Two nodes can round to the same score yet differ in rank, so every node best by the
full-precision rank keeps its score (raised to 1 when it is 0 and another node passes), and every
other node that would reach it is lowered to one below. Scores below the best stay as they are. The
argmax on the wire is then exactly the advisor's set of best nodes (``on_the_wire``).

Then one of them is crowned (``crown``): kube-scheduler would break a tie among them with its own
score plugins (which spread) and at random, so the printed profile could not make it bind where the
advisor would, and two replicas could not agree. The rule, shared by the extender, the dry-run and the
replay: **among the best nodes sorted by name, the one at position CRC-32 of the pod's name modulo
their count** gets the top score; the rest of them get one less (or, when the top is 0, the chosen one
gets 1). It looks only at what every replica sees alike (the candidates, the model, the pod's name), so
every replica and the replay make the same choice on the same state, and it spreads ties between pods
as a random choice would (measured on the openb replay: a random tie-break beat every systematic one).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from itertools import compress, repeat
from operator import and_, attrgetter, eq, ge, or_

from extender.scoring.verdict import Verdict

__all__ = ["Crown", "chosen", "crown", "lowered", "on_the_wire"]

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


def chosen(count: int, pod_name: str) -> int:
    """Where, among ``count`` best nodes sorted by name, the pod named ``pod_name`` is crowned."""
    return zlib.crc32(pod_name.encode()) % count


@dataclass(frozen=True, slots=True)
class Crown:
    """The advisor's best nodes after ``on_the_wire``, sorted by name, and the score the chosen one
    gets back (``top``) from the one all of them were lowered to (``low``)."""

    tier: tuple[str, ...]
    top: int
    low: int

    def winner(self, pod_name: str) -> str:
        return self.tier[chosen(len(self.tier), pod_name)]


def lowered(verdicts: list[Verdict]) -> tuple[list[Verdict], Crown | None]:
    """``on_the_wire``'s verdicts with every best node at the score below the top, and the Crown that
    raises one of them; (the same list, None) when there is no tie to break. Shape-level, so a reply
    made from it serves every pod of the shape, each crowning its own node (``crown``)."""
    fits = list(map(_FITS, verdicts))
    if sum(fits) < 2:
        return verdicts, None
    top = max(compress(map(_SCORE, verdicts), fits))
    tier_at = list(compress(range(len(verdicts)), map(and_, fits, map(eq, map(_SCORE, verdicts), repeat(top)))))
    if len(tier_at) < 2:
        return verdicts, None
    low, top = (top - 1, top) if top > 0 else (0, 1)
    out = list(verdicts)
    for i in tier_at:
        out[i] = replace(verdicts[i], score=low)
    return out, Crown(tuple(sorted(verdicts[i].node for i in tier_at)), top, low)


def crown(verdicts: list[Verdict], pod_name: str) -> list[Verdict]:
    """``on_the_wire``'s verdicts with exactly one node at the top score: the best node the rule above
    picks for this pod."""
    out, found = lowered(verdicts)
    if found is None:
        return verdicts
    name = found.winner(pod_name)
    for i, v in enumerate(out):
        if v.node == name and v.fits:
            out[i] = replace(v, score=found.top)
            break
    return out
