"""How much of the fleet's free GPU capacity is stranded, as the advisor's own placement counts it.

The per-node amount is ``stranding.fragmentation``: F(n) = Σ_m p_m f(n, m) in milli-GPU against the
learned mix. A sharing node is measured on its free milli per GPU; a node of whole GPUs (no sharing)
on 1000 milli per free GPU and 0 per held one, so both kinds add up in the same unit. The fleet's
amount is the sum over nodes; a defragmentation move is worth what it takes off that sum.
"""

from __future__ import annotations

from collections.abc import Iterable

from extender.cluster.state import NodeState
from extender.model.gpu_share import MILLI_PER_GPU
from extender.scoring.stranding import fragmentation
from extender.scoring.workload import Mix

__all__ = ["fleet_stranding", "node_stranding"]


def node_stranding(node: NodeState, mix: Mix) -> float:
    """F of one node in milli-GPU (0 for a node without GPUs or a mix that knows no pod yet)."""
    if not mix.pods:
        return 0.0
    shares = node.shares
    if shares is not None and not shares.problem:
        memory = shares.memory_mib[0] if shares.memory_mib else None
        return fragmentation(mix, node.gpu_model, memory, node.cpu_free, shares.free, node.memory_free)
    total = node.gpu_total
    if total <= 0:
        return 0.0
    free = min(node.free_now, total)
    gpus = (MILLI_PER_GPU,) * free + (0,) * (total - free)
    return fragmentation(mix, node.gpu_model, None, node.cpu_free, gpus, node.memory_free)


def fleet_stranding(nodes: Iterable[NodeState], mix: Mix) -> float:
    """F summed over the fleet, milli-GPU."""
    return sum(node_stranding(node, mix) for node in nodes)
