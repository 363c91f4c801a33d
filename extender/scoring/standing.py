"""The pod shapes whose verdicts the advisor keeps worked out for every node, asked or not.

A pod shape's first call at 5,000 candidates works out a plan per kind of node and a verdict per node:
tens of milliseconds in Python, where a remembered one costs a lookup per node. Pods that differ only in
CPU, memory, pod group or declared VRAM already share a table (``plan.as_planned``, ``alike``); what is
left cold is a GPU count nobody asked for yet. A fleet offers few such counts (1 to 8 whole GPUs of
each vendor its machines hold, and 2, 4 and 8 NVIDIA GPUs that must be NVLink-joined: the sizes NVLink
islands come in), so they are worked out once the cluster model is built, kept apart from the
least-recently-used tables, and filled in again as telemetry refreshes move nodes. An NVLink pod's
table costs little: where its twin's set is NVLink-joined anyway it holds the twin's very verdicts.
"""

from __future__ import annotations

from collections.abc import Iterable

from extender.cluster.state import NodeState
from extender.model.pods import GPU_RESOURCE, PodRequest

__all__ = ["MAX_STANDING_GPUS", "NVLINK_SIZES", "standing_requests"]

MAX_STANDING_GPUS = 8  # larger whole-GPU pods are rare: past a box, a job spreads over pod groups
NVLINK_SIZES = (2, 4, 8)  # pairs, quads, octets: how NVLink islands come


def standing_requests(nodes: Iterable[NodeState]) -> list[PodRequest]:
    """A pod of k whole GPUs of each vendor, for every k from 1 to the most GPUs one of that vendor's
    nodes holds (at most :data:`MAX_STANDING_GPUS`); then NVIDIA pods of 2, 4 and 8 GPUs that require
    NVLink, as far as its nodes hold them."""
    most: dict[str, int] = {}
    for node in nodes:
        total = node.gpu_total
        if total:
            resource = node.gpu_vendor.resource
            most[resource] = max(most.get(resource, 0), min(total, MAX_STANDING_GPUS))
    found = [PodRequest(gpus=k, resource=resource) for resource, top in sorted(most.items()) for k in range(1, top + 1)]
    linked = most.get(GPU_RESOURCE, 0)
    return found + [PodRequest(gpus=k, interconnect="nvlink") for k in NVLINK_SIZES if k <= linked]
