"""Admission advice for AMD Instinct partitions: a pod that names a partition mode (``amd.com/cpx_nps4``)
no node is in never starts; it is told which modes the cluster has."""

from __future__ import annotations

from extender.model.amd_partitions import partition_mode
from webhook.workload import ClusterView, Finding, Workload

__all__ = ["amd_partition_unavailable"]


def amd_partition_unavailable(w: Workload, view: ClusterView) -> list[Finding]:
    offered = sorted({r for n in view.nodes for r, v in n.allocatable.items() if v and partition_mode(r)})
    out = []
    for resource, _ in w.request.other:
        mode = partition_mode(resource)
        if mode is None or resource in offered:
            continue
        listed = ", ".join(f"{r} ({partition_mode(r)})" for r in offered) or "none"
        advice = (
            f"request one of the offered modes, or repartition a node to {mode} (amd-smi set --compute-partition, "
            "--memory-partition)"
        )
        out.append(
            Finding("amd-partition-unavailable", "error", f"no node offers {resource} (offered: {listed})", advice)
        )
    return out
