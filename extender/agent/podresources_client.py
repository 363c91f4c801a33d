"""The kubelet's PodResources API (gRPC on a unix socket): which GPUs are allocatable and who holds them.

Device IDs are GPU UUIDs (time-sliced replicas append ``::N``), mapped to indices through the topology:
free = allocatable − the devices assigned to containers, for ``nvidia.com/gpu``.
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.model.pods import GPU_RESOURCE
from extender.model.topology import GpuTopology

__all__ = ["DEFAULT_SOCKET", "Allocation", "PodResourcesClient", "device_uuid", "free_gpu_indices"]

DEFAULT_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"


@dataclass(frozen=True)
class Allocation:
    """What the kubelet says: every allocatable device ID, and which container holds which."""

    allocatable: frozenset[str]
    holders: dict[str, tuple[str, str, str]]  # device ID → (namespace, pod, container)


class PodResourcesClient:
    """The kubelet's PodResources v1 service over its unix socket."""

    def __init__(self, socket_path: str = DEFAULT_SOCKET, timeout_s: float = 5.0) -> None:
        import grpc

        from extender.agent.podresources import api_pb2_grpc

        self.socket_path = socket_path
        self.timeout_s = timeout_s
        self._channel = grpc.insecure_channel(f"unix://{socket_path}")
        self._stub = api_pb2_grpc.PodResourcesListerStub(self._channel)

    def allocation(self, resource: str = GPU_RESOURCE) -> Allocation:
        from extender.agent.podresources import api_pb2

        allocatable = self._stub.GetAllocatableResources(api_pb2.AllocatableResourcesRequest(), timeout=self.timeout_s)
        listed = self._stub.List(api_pb2.ListPodResourcesRequest(), timeout=self.timeout_s)
        ids = frozenset(d for dev in allocatable.devices if dev.resource_name == resource for d in dev.device_ids)
        holders = {
            device: (pod.namespace, pod.name, container.name)
            for pod in listed.pod_resources
            for container in pod.containers
            for dev in container.devices
            if dev.resource_name == resource
            for device in dev.device_ids
        }
        return Allocation(ids, holders)

    def close(self) -> None:
        self._channel.close()


def device_uuid(device_id: str) -> str:
    """The GPU behind a device ID: time-slicing advertises each GPU N times as ``<uuid>::<replica>``."""
    return device_id.split("::", 1)[0]


def free_gpu_indices(topology: GpuTopology, allocation: Allocation) -> tuple[int, ...]:
    """Physical GPUs the kubelet may still hand out: allocatable, and no replica of them assigned."""
    # NVIDIA's device plugin names a GPU by UUID; AMD's by PCI bus id.
    index_of = {key: g.index for g in topology.gpus for key in (g.uuid, g.pci_bus_id) if key}
    allocatable = {index_of[device_uuid(d)] for d in allocation.allocatable if device_uuid(d) in index_of}
    held = {index_of[device_uuid(d)] for d in allocation.holders if device_uuid(d) in index_of}
    return tuple(sorted(allocatable - held))
