"""The node view: the GPU wiring as a graph (NVLink edges by link count, PCIe levels, NUMA groups,
NVSwitch, MIG slices), each GPU's tile, and the best sets the node could still give for k = 1, 2, 4, 8
(the same placement engine and policy the extender scores with)."""

from __future__ import annotations

from typing import Any

from extender.cluster.state import NodeState
from extender.http.advisor import Advisor
from extender.http.console.cluster_view import node_card
from extender.http.console.rack_view import clique_card
from extender.model.topology import GpuTopology
from extender.placement import Placer

__all__ = ["BEST_SET_SIZES", "best_sets", "node_view", "wiring"]

BEST_SET_SIZES = (1, 2, 4, 8)


def _behind_switch(topo: GpuTopology) -> bool:
    """Every pair joined by the same NVLink count: an NVSwitch fabric (drawn as one hub, not n² edges)."""
    counts = {link.nvlinks for link in topo.links}
    pairs = len(topo.indices) * (len(topo.indices) - 1) // 2
    return len(topo.indices) > 2 and len(topo.links) == pairs and len(counts) == 1 and counts != {0}


def wiring(topo: GpuTopology) -> dict[str, Any]:
    switch = _behind_switch(topo) and topo.vendor.link == "NVLink"  # an XGMI board is a mesh, not a switch
    return {
        "link": topo.vendor.link,  # NVLink or XGMI: how links are labelled
        "nvswitch": switch,
        "nvswitch_links": topo.links[0].nvlinks if switch else None,
        "links": [
            {"a": link.a, "b": link.b, "nvlinks": link.nvlinks, "pcie": link.pcie.value if link.pcie else None}
            for link in topo.links
        ],
        "numa": [
            {"numa": numa, "gpus": gpus} for numa, gpus in sorted(topo.numa_groups().items(), key=lambda kv: str(kv[0]))
        ],
    }


def best_sets(node: NodeState, placer: Placer, policy: Any) -> list[dict[str, Any]]:
    """For each k the node has GPUs for: the set the placement policy would hand out now, or why none."""
    topo = node.topology
    if topo is None or node.free_gpus is None:
        return []
    found = []
    for k in (k for k in BEST_SET_SIZES if k <= len(topo.indices)):
        answer = placer.assess(topo, k, node.free_gpus, policy)
        placed = answer.placement
        found.append(
            {
                "k": k,
                "gpus": list(placed.gpus) if placed else None,
                "score": placed.score if placed else None,
                "nvlink_share": round(answer.nvlink_share, 2) if placed else None,
                "problem": None if placed else answer.problem,
            }
        )
    return found


def node_view(advisor: Advisor, node: NodeState) -> dict[str, Any]:
    view = node_card(node, advisor.telemetry, advisor.clock())
    topo = node.topology
    view["wiring"] = wiring(topo) if topo is not None else None
    view["topology_problem"] = node.topology_problem
    view["best_sets"] = best_sets(node, advisor.state.machines.placer, advisor.policy.placement)
    view["clique"] = clique_card(node, advisor.state.nodes())
    return view
