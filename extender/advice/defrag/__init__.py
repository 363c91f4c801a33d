"""Defragmentation: a few pod moves that make a pending pod placeable, or that strand less of the fleet."""

from extender.advice.defrag.destination import Judge
from extender.advice.defrag.fleet_plan import for_fleet
from extender.advice.defrag.movable import MOVABLE, Movable, movable_pods
from extender.advice.defrag.plan import Applied, DefragError, DefragPlan, LeftAlone, Move
from extender.advice.defrag.pod_plan import for_pod
from extender.advice.defrag.world import World

__all__ = [
    "MOVABLE",
    "Applied",
    "DefragError",
    "DefragPlan",
    "Judge",
    "LeftAlone",
    "Movable",
    "Move",
    "World",
    "for_fleet",
    "for_pod",
    "movable_pods",
]
