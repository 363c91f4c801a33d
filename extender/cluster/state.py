"""The advisor's model of the cluster: per node, its GPUs, how they are wired, which are free, and the
GPU pods bound to it.

Every source (the live API server, a snapshot file, the built-in simulated cluster) ends as Kubernetes
Node and Pod objects, which :func:`node_state` turns into an immutable :class:`NodeState`; the request
path only ever reads those.

Node annotations written by the node agent (or ``gpu-advisor topology publish``):

- ``gpu-advisor.io/topology``: the topology JSON document (see ``extender.model.topology``).
- ``gpu-advisor.io/free-gpus``: ``{"version": 1, "free": [0, 2, 5], "at": "2026-12-02T11:07:02Z"}`` —
  the GPU indices no container holds, as the kubelet's PodResources API reported them at ``at``.

GPU pods bound after ``at`` are assumed to hold the set NVIDIA's best-effort policy would give them
(what the device plugin really does); without a report every bound GPU pod is replayed that way.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from extender.cluster.bound_pods import read_bound_pod
from extender.cluster.degradation import SourceHealth
from extender.cluster.dra_view import NO_DRA, DraObjects
from extender.cluster.node import LABEL_REPLICAS, BoundPod, FreeReport, NodeState, format_time, parse_time
from extender.cluster.node_facts import ANNOTATION_FREE_GPUS, ANNOTATION_TOPOLOGY, NodeFacts, node_facts
from extender.cluster.overcommit import overcommitment
from extender.cluster.shares import gpu_shares
from extender.model.gpu_vendor import VENDORS
from extender.model.pods import GPU_RESOURCE, MIG_PREFIX, PodRequest
from extender.model.topology import GpuTopology, TopologyError
from extender.placement import PlacementImpossible, Placer

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

log = logging.getLogger(__name__)


def bound_pod(pod: Mapping[str, Any]) -> tuple[str, BoundPod] | None:
    """(node name, pod) for a pod that holds GPUs, CPU or memory on a node now; None for any other pod
    (:func:`read_bound_pod` also says what could not be read of it)."""
    return read_bound_pod(pod).found


class MachineTypes:
    """What the cluster model keeps per machine type: one shared, immutable GpuTopology per distinct
    annotation (a fleet has a few machine types, and a graph per node would be thousands of long-lived
    objects for the garbage collector to walk), and the placement engine whose memos they share."""

    def __init__(self) -> None:
        self.placer = Placer()
        self._topologies: dict[str, GpuTopology | TopologyError] = {}

    def topology(self, text: str) -> GpuTopology:
        """The topology of an annotation (:class:`TopologyError` when unreadable)."""
        topo = self._topologies.get(text)
        if topo is None:
            try:
                topo = GpuTopology.from_json(text)
            except TopologyError as exc:
                topo = exc  # remembered too: a node's every pod change must not parse a bad one again
            if len(self._topologies) > 4096:
                self._topologies.clear()
            self._topologies[text] = topo
            if not isinstance(topo, TopologyError):
                self.placer.wiring(topo)  # a new machine type: its placement tables are built here, not on a request
        if isinstance(topo, TopologyError):
            raise TopologyError(str(topo))
        return topo


def node_state(
    node: Mapping[str, Any],
    pods: Iterable[BoundPod] = (),
    machines: MachineTypes | None = None,
    facts: NodeFacts | None = None,
) -> NodeState:
    """A Node object (and the GPU pods bound to it) → what the advisor knows of that node.

    ``machines`` is the cluster model's (``ClusterState.machines``), so nodes of one type share their
    topology and placement work; without it the node gets a catalogue of its own. ``facts``: what
    ``node_facts`` read of this very Node object before (a live model rebuilding a node for a pod).
    """
    machines = machines or MachineTypes()
    facts = facts or node_facts(node, machines)
    allocatable = facts.allocatable
    every_pod = tuple(sorted((_held(p, allocatable) for p in pods), key=lambda p: (p.bound_at or 0.0, p.key)))
    pod_list = tuple(p for p in every_pod if p.request.wants_gpu)  # the GPU pods
    free, assumed = _derive_free(facts.topology, facts.report, pod_list, facts.labels, machines.placer)
    holders = {g: pod for pod, gpus in assumed for g in gpus}
    shares = gpu_shares(node, ((p.request, p.assigned) for p in pod_list), facts.offered)
    return NodeState(
        facts.name,
        facts.labels,
        allocatable,
        facts.capacity,
        facts.topology,
        facts.topology_problem,
        facts.report,
        pod_list,
        free,
        assumed,
        holders=holders,
        taints=facts.taints,
        unschedulable=facts.unschedulable,
        shares=shares,
        cpu_allocatable=facts.cpu_allocatable,
        memory_allocatable=facts.memory_allocatable,
        cpu_requested=sum(p.request.cpu_milli for p in every_pod),
        memory_requested=sum(p.request.memory_mib for p in every_pod),
        # A node that lists only capacity is over-committed against its capacity.
        overcommitted=overcommitment(allocatable or facts.capacity, pod_list, shares),
    )


def _held(pod: BoundPod, allocatable: Mapping[str, int]) -> BoundPod:
    """A pod whose counts could not be read holds every GPU resource of its node."""
    if not pod.holds_all:
        return pod
    everything = {k: v for k, v in allocatable.items() if v}
    resource = next((v.resource for v in VENDORS if v.resource in everything), GPU_RESOURCE)
    request = PodRequest(
        resource=resource,
        gpus=everything.pop(resource, 0),
        mig=tuple(sorted((k.removeprefix(MIG_PREFIX), v) for k, v in everything.items() if k.startswith(MIG_PREFIX))),
        other=tuple(sorted((k, v) for k, v in everything.items() if not k.startswith(MIG_PREFIX))),
    )
    return dataclasses.replace(pod, request=request)


def _derive_free(
    topo: GpuTopology | None,
    report: FreeReport | None,
    pods: tuple[BoundPod, ...],
    labels: Mapping[str, str],
    placer: Placer,
) -> tuple[tuple[int, ...] | None, tuple[tuple[str, tuple[int, ...]], ...]]:
    if topo is None:
        return None, ()
    if labels.get(LABEL_REPLICAS, "1") not in ("", "1"):
        # Time-sliced: replicas map onto physical GPUs in ways the API does not show; every physical
        # GPU stays a candidate and memory, not GPU identity, is what must fit.
        return topo.indices, ()
    known = set(topo.indices)
    if report is not None:
        free = {g for g in report.free if g in known}
        later = [p for p in pods if p.bound_at is not None and p.bound_at > report.at]
    else:
        free, later = set(known), list(pods)
    assumed: list[tuple[str, tuple[int, ...]]] = []
    for pod in later:
        if not pod.request.gpus:
            continue
        try:
            placed = placer.best_placement(topo, pod.request.gpus, free=sorted(free), policy="nvidia-best-effort")
        except PlacementImpossible:
            log.info("pod %s: %d GPUs but %d known free; report is behind", pod.key, pod.request.gpus, len(free))
            continue
        free -= set(placed.gpus)
        assumed.append((pod.key, placed.gpus))
    return tuple(sorted(free)), tuple(assumed)


class ClusterState:
    """The current :class:`NodeState` per node, updated by one source, read by every request.

    Writers replace whole NodeState objects under a lock; readers take single dict lookups, which
    are atomic, so a request never waits on the API server.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        # Shared by every node this model builds (sources pass it to node_state) and by scoring.
        self.machines = MachineTypes()
        self._nodes: dict[str, NodeState] = {}
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self.synced_at: float | None = None
        self._listeners: list[Callable[[Iterable[str] | None], None]] = []
        # How a live source that keeps this model fares (what /readyz reports); None: a fixed model.
        self.source_health: SourceHealth | None = None
        # The DRA claims and templates pending pods may ask through (``dra_view``); none by default.
        self.dra: DraObjects = NO_DRA

    def subscribe(self, listener: Callable[[Iterable[str] | None], None]) -> None:
        """``listener(names)`` after nodes change; ``listener(None)`` after everything was replaced."""
        self._listeners.append(listener)

    def _changed(self, names: Iterable[str] | None) -> None:
        for listener in self._listeners:
            listener(names)

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def mark_ready(self, at: float) -> None:
        self.synced_at = at
        self._ready.set()

    def wait_ready(self, timeout: float) -> bool:
        return self._ready.wait(timeout)

    def node(self, name: str) -> NodeState | None:
        return self._nodes.get(name)

    def nodes_by_name(self) -> Mapping[str, NodeState]:
        """The live mapping, for many lookups in one request (read only)."""
        return self._nodes

    def nodes(self) -> list[NodeState]:
        return list(self._nodes.values())

    def replace_all(self, nodes: Iterable[NodeState]) -> None:
        fresh = {n.name: n for n in nodes}
        with self._lock:
            self._nodes = fresh
            self._changed(None)

    def put(self, node: NodeState) -> None:
        with self._lock:
            self._nodes[node.name] = node
            self._changed((node.name,))

    def remove(self, name: str) -> None:
        with self._lock:
            self._nodes.pop(name, None)
            self._changed((name,))
