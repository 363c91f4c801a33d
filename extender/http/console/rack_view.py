"""Racks: the nodes one NVLink clique joins (a GB200/GB300 NVL72 rack, or a partition of it), drawn as
one box, since a multi-node job is only fast with all its pods inside one clique.

Counts are the kubelet's (allocatable and what bound pods hold), the same ones the clique scoring
reads, so the box says what the extender sees when it places a pod group.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from extender.cluster.cliques import clique_of, short_clique
from extender.cluster.state import NodeState
from extender.model.pod_groups import PodGroup

__all__ = ["clique_card", "rack_cards"]


def _workers_here(group: PodGroup, here: int) -> str:
    """Say "3 of 8 workers here"; without a known size just the count, not a guess at the whole."""
    return f"{here} of {group.size} workers here" if group.size else f"{here} workers here"


def _groups(trays: list[NodeState]) -> list[dict[str, Any]]:
    found: dict[str, PodGroup] = {}
    here: Counter[str] = Counter()
    for node in trays:
        for pod in node.pods:
            group = pod.request.group
            if group is not None:
                found.setdefault(group.key, group)
                here[group.key] += 1
    return [
        {"kind": g.kind, "key": key, "size": g.size, "here": here[key], "text": _workers_here(g, here[key])}
        for key, g in sorted(found.items())
    ]


def _rack(clique: str, trays: list[NodeState]) -> dict[str, Any]:
    gpus = sum(n.gpu_total for n in trays)
    free = sum(n.free_now for n in trays)
    return {
        "clique": clique,
        "short": short_clique(clique),
        "trays": [n.name for n in trays],
        "gpus": gpus,
        "free": free,
        "allocated": gpus - free,
        "groups": _groups(trays),
    }


def rack_cards(nodes: Iterable[NodeState]) -> list[dict[str, Any]]:
    """One card per NVLink clique in the cluster, its trays by name; nodes off any clique are left out."""
    by_clique: dict[str, list[NodeState]] = {}
    for node in sorted(nodes, key=lambda n: n.name):
        clique = clique_of(node)
        if clique is not None:
            by_clique.setdefault(clique, []).append(node)
    return [_rack(clique, trays) for clique, trays in sorted(by_clique.items())]


def clique_card(node: NodeState, nodes: Iterable[NodeState]) -> dict[str, Any] | None:
    """The node's clique and its rack-mates (the other nodes in it); None for a node off any clique."""
    clique = clique_of(node)
    if clique is None:
        return None
    mates = sorted(n.name for n in nodes if n.name != node.name and clique_of(n) == clique)
    return {"clique": clique, "short": short_clique(clique), "rack_mates": mates}
