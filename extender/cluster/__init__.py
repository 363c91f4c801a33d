"""The advisor's model of the cluster: per node what it has, how it is wired, what is free and held.

``node`` (the immutable NodeState and the agent's free-GPU report), ``state`` (building NodeStates
from Kubernetes objects, the ClusterState every request reads, the per-machine-type catalogue),
``selectors`` (kube-scheduler's own eligibility rules).
"""

from __future__ import annotations

from extender.cluster.node import BoundPod, FreeReport, NodeState, format_time, parse_time
from extender.cluster.state import (
    ANNOTATION_FREE_GPUS,
    ANNOTATION_TOPOLOGY,
    ClusterState,
    MachineTypes,
    bound_pod,
    node_state,
)

__all__ = [
    "ANNOTATION_FREE_GPUS",
    "ANNOTATION_TOPOLOGY",
    "BoundPod",
    "ClusterState",
    "FreeReport",
    "MachineTypes",
    "NodeState",
    "bound_pod",
    "format_time",
    "node_state",
    "parse_time",
]
