"""Is a node over-committed: do the pods bound to it hold more than it has?

kube-scheduler checks a pod's resources against the node, but it counts no sharing annotation: pods that
share GPUs by ``alibabacloud.com/gpu-milli`` (or bind without the sharing scheduler that writes their GPU
record) can pile onto one GPU past all of it, and a pod bound by ``spec.nodeName`` skips every check. A
node is over-committed when

- the whole-GPU requests bound to it (``nvidia.com/gpu``, ``amd.com/gpu``, each MIG profile and any other
  GPU resource, counted as the model counts them, HAMi's physical-GPU counts included) add up to more than
  the node's allocatable of that resource: 10 × ``nvidia.com/gpu`` bound on 8 allocatable; or
- on one shared GPU, the shares bound to it add up to more than the GPU (``GpuShares.overcommitted``):
  600 + 600 milli on one GPU, or HAMi cores past 100 %.

A pod whose counts could not be read is only *taken* to hold its whole node (``bound_pods``); that guess
is left out here, so it never makes a node look over-committed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from extender.cluster.node import BoundPod
from extender.cluster.shares import GpuShares
from extender.model.gpu_share import MILLI_PER_GPU
from extender.model.pods import MIG_PREFIX

__all__ = ["overcommitment"]


def _bound(pods: Iterable[BoundPod]) -> dict[str, int]:
    """Resource → the count of it bound, by pods whose counts were read."""
    bound: dict[str, int] = {}
    for pod in pods:
        request = pod.request
        if pod.holds_all:
            continue
        # An Alibaba or Aliyun share asks no resource of kube-scheduler; a HAMi share asks its physical GPUs.
        if request.gpus and (request.share is None or request.share.convention == "hami"):
            bound[request.resource] = bound.get(request.resource, 0) + request.gpus
        for name, count in (*((MIG_PREFIX + p, n) for p, n in request.mig), *request.other):
            bound[name] = bound.get(name, 0) + count
    return bound


def overcommitment(
    allocatable: Mapping[str, int], pods: Iterable[BoundPod], shares: GpuShares | None
) -> tuple[str, ...]:
    """What a node holds more of than it has, one short line each; empty when it is not over-committed."""
    found = [
        f"{name}: {count} bound, {allocatable.get(name, 0)} allocatable"
        for name, count in sorted(_bound(pods).items())
        if count > allocatable.get(name, 0)
    ]
    for index, milli, cores in shares.overcommitted if shares is not None else ():
        if milli > MILLI_PER_GPU:
            found.append(f"GPU {index}: {milli} milli bound of {MILLI_PER_GPU}")
        if cores > 100:
            found.append(f"GPU {index}: {cores} % of its cores bound")
    return tuple(found)
