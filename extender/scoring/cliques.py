"""The clique term: the pods of one multi-node job steered into one NVLink clique.

A group's first pod goes to the clique that can hold the whole group (the tightest such clique, so
the larger ones stay whole for larger jobs); every later pod goes to the clique that already holds
most of its members. A group that must have NVLink between every pair of pods
(``gpu-advisor.io/interconnect: nvlink``) is held to that clique: nodes outside it fail, and when no
clique has room for the whole group every node fails with the reason, so the group waits rather
than straddles racks. Any other group is only steered: nodes outside rank below those inside.

This term reads other nodes (where the members are), so it is applied to a node's remembered verdict
on every call, never remembered with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from extender.cluster.cliques import CliqueRoom, clique_of, clique_rooms, short_clique
from extender.cluster.node import NodeState
from extender.model.pod_groups import PodGroup
from extender.model.pods import PodRequest
from extender.scoring.verdict import Verdict

__all__ = ["OUTSIDE", "CliqueChoice", "choose_clique", "toward_clique"]

OUTSIDE = "; this node is in "  # what follows a group's reason on a node outside its clique
# Added to the stranding level of a node in the chosen clique (levels run 0–100): it outranks every other.
_INSIDE = 1000.0


@dataclass(frozen=True)
class CliqueChoice:
    target: str | None  # the clique the pod is steered to; None: none can take the group
    inside: str  # why, for a node in the target
    must: bool  # outside the target a node fails (else it only ranks lower)
    members: int = 0  # pods of the group already in the target

    def outside(self, clique: str | None) -> str:
        where = f"clique {short_clique(clique)}" if clique else "no NVLink clique"
        if self.target is None:
            return self.inside
        return f"{self.inside}{OUTSIDE}{where}"


def choose_clique(group: PodGroup, request: PodRequest, rooms: Mapping[str, CliqueRoom]) -> CliqueChoice:
    """Where this pod of ``group`` should go, given every clique's members and room."""
    must = request.interconnect == "nvlink"
    size = group.size
    of = f"of {size} " if size else ""
    placed = sum(r.members for r in rooms.values())
    if placed:
        home = max(rooms.values(), key=lambda r: (r.members, r.room, r.clique))
        words = f"{home.members} {of}pods of {group.kind} {group.name} already in clique {short_clique(home.clique)}"
        elsewhere = placed - home.members
        if elsewhere:
            words += f" ({elsewhere} in other cliques)"
        return CliqueChoice(home.clique, words, must, home.members)
    need = size or 1
    fitting = [r for r in rooms.values() if r.room >= need]
    if fitting:
        best = min(fitting, key=lambda r: (r.room, r.clique))
        words = f"first pod of {group.kind} {group.name}: clique {short_clique(best.clique)} has room for all {need}"
        return CliqueChoice(best.clique, words, must)
    largest = max((r.room for r in rooms.values()), default=0)
    return CliqueChoice(None, f"needs {need} pods in one clique; largest clique with room holds {largest}", must)


def toward_clique(request: PodRequest, verdicts: list[Verdict], nodes: Mapping[str, NodeState]) -> list[Verdict]:
    """The verdicts with the clique term applied (the same list when the pod is of no group, or the
    cluster has no cliques)."""
    group = request.group
    if group is None or request.gpus <= 0:
        return verdicts
    rooms = clique_rooms(group, request, nodes.values())
    if not rooms:
        return verdicts
    choice = choose_clique(group, request, rooms)
    out: list[Verdict] = []
    for v in verdicts:
        node = nodes.get(v.node)
        clique = clique_of(node) if node is not None else None
        if not v.fits or node is None:  # a node the model does not know yet passes unjudged (fail open)
            out.append(v)
        elif choice.target is not None and clique == choice.target:
            rank = (v.rank[0] + _INSIDE, v.rank[1])
            breakdown = {**v.breakdown, "clique": 1.0}
            out.append(replace(v, reason=f"{v.reason}; {choice.inside}", rank=rank, breakdown=breakdown))
        elif choice.must:
            breakdown = {**v.breakdown, "clique": 0.0}
            out.append(replace(v, fits=False, score=0, gpus=None, reason=choice.outside(clique), breakdown=breakdown))
        else:
            breakdown = {**v.breakdown, "clique": 0.0}
            out.append(replace(v, reason=f"{v.reason}; {choice.outside(clique)}", breakdown=breakdown))
    return out
