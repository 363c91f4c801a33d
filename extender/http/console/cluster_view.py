"""The cluster view: every node with its GPUs as tiles, and totals that keep *allocated* apart from *used*."""

from __future__ import annotations

from collections import Counter
from typing import Any

from extender.cluster.state import NodeState
from extender.http.advisor import Advisor
from extender.http.console.rack_view import rack_cards
from extender.http.console.tiles import gpu_tiles
from extender.model.readings import TelemetryBoard

__all__ = ["cluster_view", "node_card", "sharing_label"]


def sharing_label(node: NodeState) -> str:
    """What one ``nvidia.com/gpu`` is on this node, as a short label: whole, time-sliced ×4, MPS ×2, MIG …"""
    if node.mig_profiles():
        return "MIG " + ", ".join(f"{node.mig_total(p)}× {p}" for p in node.mig_profiles())
    if node.mig_single:
        return f"MIG single {node.mig_single}"
    if node.mps:
        return f"MPS ×{node.replicas}"
    if node.time_sliced:
        return f"time-sliced ×{node.replicas}"
    return "whole"


def _mig_slices(node: NodeState) -> list[dict[str, Any]]:
    return [{"profile": p, "total": node.mig_total(p), "free": node.mig_free(p)} for p in node.mig_profiles()]


def node_card(node: NodeState, telemetry: TelemetryBoard | None, now: float) -> dict[str, Any]:
    age = telemetry.node_age(node.name, now) if telemetry is not None else None
    return {
        "name": node.name,
        "product": node.product,
        "sharing": sharing_label(node),
        "gpus_allocatable": node.gpu_total,
        "gpus_free": node.free_now,
        "telemetry_age_s": None if age is None else round(age, 1),
        "namespaces": sorted({p.namespace for p in node.pods}),
        "pods": [{"key": p.key, "request": p.request.describe()} for p in node.pods],
        "mig": _mig_slices(node),
        "gpus": gpu_tiles(node, telemetry, now),
        "overcommitted": list(node.overcommitted),
    }


def _totals(cards: list[dict[str, Any]]) -> dict[str, int]:
    states = Counter(tile["state"] for card in cards for tile in card["gpus"])
    allocated = states["allocated"] + states["busy"]
    return {
        "gpus": sum(states.values()),
        "allocated": allocated,
        "used": states["busy"],
        # the case the console exists for: handed out, yet its SMs idle
        "allocated_idle": states["allocated"],
        "free": states["free"],
        "memory_held": states["memory-held"],
        "unhealthy": states["unhealthy"],
    }


def cluster_view(advisor: Advisor) -> dict[str, Any]:
    now = advisor.clock()
    nodes = sorted(advisor.state.nodes(), key=lambda n: n.name)
    cards = [node_card(n, advisor.telemetry, now) for n in nodes]
    return {
        "source": advisor.state.source,
        "at": now,
        "totals": _totals(cards),
        "products": sorted({c["product"] for c in cards if c["product"]}),
        "namespaces": sorted({ns for c in cards for ns in c["namespaces"]}),
        "nodes": cards,
        "racks": rack_cards(nodes),  # nodes sharing an NVLink clique, drawn as one box around their cards
    }
