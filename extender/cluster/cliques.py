"""NVLink cliques: the nodes one NVLink fabric joins (a GB200/GB300 NVL72 rack, or a partition of it).

GPU Feature Discovery labels each node ``nvidia.com/gpu.clique: <cluster UUID>.<clique id>`` from NVML's
GPU fabric info; the node agent publishes the same in its topology document (``clique``). A multi-node
job is only fast with all its pods in one clique, so the advisor counts, per clique, the pods of a group
already there and how many more pods of the same shape its nodes can take now.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from extender.cluster.node import NodeState
from extender.model.pod_groups import PodGroup
from extender.model.pods import PodRequest

__all__ = ["LABEL_CLIQUE", "CliqueRoom", "clique_of", "clique_rooms", "short_clique"]

LABEL_CLIQUE = "nvidia.com/gpu.clique"


def clique_of(node: NodeState) -> str | None:
    """The node's NVLink clique: GFD's label, else the agent's topology; None off any NVLink fabric."""
    return node.labels.get(LABEL_CLIQUE) or (node.topology.clique if node.topology is not None else None)


def short_clique(clique: str) -> str:
    """``<cluster UUID>.<clique id>`` as people say it: the clique id, with the UUID's first block."""
    uuid, sep, ident = clique.rpartition(".")
    return f"{uuid.split('-')[0]}.{ident}" if sep and uuid else clique


@dataclass(frozen=True)
class CliqueRoom:
    clique: str
    members: int  # pods of the group already bound on its nodes
    room: int  # more pods of the asked shape its nodes can take now
    nodes: int


def pods_that_fit(node: NodeState, request: PodRequest) -> int:
    """How many more pods of this whole-GPU request the node can take now (0 when it cannot be used)."""
    if request.gpus <= 0 or node.unschedulable:
        return 0
    return node.free_now // request.gpus


def clique_rooms(group: PodGroup, request: PodRequest, nodes: Iterable[NodeState]) -> dict[str, CliqueRoom]:
    """Per clique of the cluster: the group's members there and the room left for pods like this one."""
    tally: dict[str, list[int]] = {}
    for node in nodes:
        clique = clique_of(node)
        if clique is None:
            continue
        counts = tally.setdefault(clique, [0, 0, 0])
        counts[0] += sum(1 for pod in node.pods if pod.request.group is not None and pod.request.group.key == group.key)
        counts[1] += pods_that_fit(node, request)
        counts[2] += 1
    return {c: CliqueRoom(c, members, room, n) for c, (members, room, n) in tally.items()}
