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

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import count
from typing import Any

from extender.model.pods import GPU_RESOURCE, MIG_PREFIX, PodRequest, PodSpecError, pod_request
from extender.model.topology import GpuTopology, TopologyError
from extender.placement.core import PlacementImpossible, best_placement

__all__ = [
    "ANNOTATION_FREE_GPUS",
    "ANNOTATION_TOPOLOGY",
    "BoundPod",
    "ClusterState",
    "FreeReport",
    "NodeState",
    "bound_pod",
    "node_state",
    "parse_time",
]

log = logging.getLogger(__name__)

ANNOTATION_TOPOLOGY = "gpu-advisor.io/topology"
ANNOTATION_FREE_GPUS = "gpu-advisor.io/free-gpus"
LABEL_PRODUCT = "nvidia.com/gpu.product"
LABEL_MEMORY = "nvidia.com/gpu.memory"
LABEL_COUNT = "nvidia.com/gpu.count"
LABEL_REPLICAS = "nvidia.com/gpu.replicas"
LABEL_SHARING = "nvidia.com/gpu.sharing-strategy"
LABEL_MIG_STRATEGY = "nvidia.com/mig.strategy"
LABEL_CLIQUE = "nvidia.com/gpu.clique"

_versions = count(1)


def parse_time(text: str | None) -> float | None:
    """RFC 3339 as Kubernetes writes it → epoch seconds; None when absent or unreadable."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def format_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class FreeReport:
    free: tuple[int, ...]
    at: float

    def to_json(self) -> str:
        return json.dumps({"version": 1, "free": list(self.free), "at": format_time(self.at)}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> FreeReport:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"free-gpus annotation is not JSON: {exc}") from None
        if not isinstance(doc, Mapping) or not isinstance(doc.get("free"), list):
            raise ValueError("free-gpus annotation needs a list 'free'")
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in doc["free"]):
            raise ValueError("free-gpus annotation: 'free' must hold GPU indices")
        at = parse_time(doc.get("at"))
        if at is None:
            raise ValueError("free-gpus annotation needs a time 'at' such as 2026-12-02T11:07:02Z")
        return cls(tuple(sorted(doc["free"])), at)


@dataclass(frozen=True)
class BoundPod:
    namespace: str
    name: str
    request: PodRequest
    bound_at: float | None
    priority: int = 0

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class NodeState:
    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, int]
    capacity: Mapping[str, int]
    topology: GpuTopology | None
    topology_problem: str | None  # why a present annotation could not be used
    report: FreeReport | None
    pods: tuple[BoundPod, ...]
    free_gpus: tuple[int, ...] | None  # physical GPUs believed free; None without a topology
    assumed: tuple[tuple[str, tuple[int, ...]], ...]  # pods bound after the report → their predicted GPUs
    version: int = field(default_factory=lambda: next(_versions), compare=False)
    # Verdicts already worked out for this very node state, by pod shape (see scoring.judge_all). It
    # lives and dies with the state: a change makes a new NodeState with an empty memo.
    memo: dict[int, Any] = field(default_factory=dict, compare=False, repr=False)
    # Physical GPU → pod, for the GPUs whose holder this model knows (the assumed placements).
    holders: dict[int, str] = field(default_factory=dict, compare=False, repr=False)
    taints: tuple[Mapping[str, str], ...] = ()  # spec.taints: {key, value, effect}
    unschedulable: bool = False

    # -- GFD labels and resources ------------------------------------------------------------------

    @property
    def product(self) -> str | None:
        if LABEL_PRODUCT in self.labels:
            return self.labels[LABEL_PRODUCT]
        products = {g.product for g in self.topology.gpus} if self.topology else set()
        return products.pop() if len(products) == 1 else None

    @property
    def gpu_memory_mib(self) -> int | None:
        """Memory of one physical GPU: GFD's label, else the topology's."""
        try:
            return int(self.labels[LABEL_MEMORY])
        except (KeyError, ValueError):
            pass
        if self.topology:
            sizes = [g.memory_mib for g in self.topology.gpus if g.memory_mib]
            return min(sizes) if sizes else None
        return None

    @property
    def replicas(self) -> int:
        try:
            return max(1, int(self.labels.get(LABEL_REPLICAS, "1")))
        except ValueError:
            return 1

    @property
    def time_sliced(self) -> bool:
        sharing = self.labels.get(LABEL_SHARING, "")
        return self.replicas > 1 and sharing in ("time-slicing", "")

    @property
    def gpu_total(self) -> int:
        return self.allocatable.get(GPU_RESOURCE, 0)

    @property
    def gpu_used(self) -> int:
        return sum(p.request.gpus for p in self.pods)

    @property
    def gpu_free_count(self) -> int:
        return max(0, self.gpu_total - self.gpu_used)

    @property
    def free_now(self) -> int:
        """Free GPUs by the tighter of the two views: allocation counts, and the agent's report."""
        if self.free_gpus is not None and not self.time_sliced:
            return min(self.gpu_free_count, len(self.free_gpus))
        return self.gpu_free_count

    def mig_total(self, profile: str) -> int:
        return self.allocatable.get(MIG_PREFIX + profile, 0)

    def mig_free(self, profile: str) -> int:
        used = sum(n for p in self.pods for prof, n in p.request.mig if prof == profile)
        return max(0, self.mig_total(profile) - used)

    def mig_profiles(self) -> list[str]:
        return sorted(k.removeprefix(MIG_PREFIX) for k, v in self.allocatable.items() if k.startswith(MIG_PREFIX) and v)

    def declared_memory_mib(self) -> int:
        """VRAM declared by the pods on this node (``gpu-advisor.io/gpu-memory`` × their GPUs)."""
        return sum((p.request.gpu_memory_mib or 0) * max(1, p.request.gpus) for p in self.pods)


def _resources(section: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    if isinstance(section, Mapping):
        for name, value in section.items():
            if isinstance(name, str) and name.startswith("nvidia.com/"):
                try:
                    out[name] = int(str(value))
                except ValueError:
                    continue
    return out


def bound_pod(pod: Mapping[str, Any]) -> tuple[str, BoundPod] | None:
    """(node name, pod) for a pod that holds GPUs on a node now; None for any other pod."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    node = spec.get("nodeName")
    if not node or status.get("phase") in ("Succeeded", "Failed"):
        return None
    meta = pod.get("metadata") or {}
    try:
        request = pod_request(pod)
    except PodSpecError:
        return None  # the API server accepted it, so its GPU request is whatever the kubelet made of it
    if not request.wants_gpu:
        return None
    bound_at = None
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            bound_at = parse_time(cond.get("lastTransitionTime"))
    bound_at = bound_at or parse_time(status.get("startTime")) or parse_time(meta.get("creationTimestamp"))
    priority = spec.get("priority") or 0
    return str(node), BoundPod(
        str(meta.get("namespace", "default")), str(meta.get("name", "")), request, bound_at, int(priority)
    )


def node_state(node: Mapping[str, Any], pods: Iterable[BoundPod] = ()) -> NodeState:
    """A Node object (and the GPU pods bound to it) → what the advisor knows of that node."""
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    name = str(meta.get("name", ""))
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    annotations = meta.get("annotations") or {}
    allocatable = _resources(status.get("allocatable"))
    capacity = _resources(status.get("capacity")) or dict(allocatable)

    topology, problem = None, None
    if ANNOTATION_TOPOLOGY in annotations:
        try:
            topology = _parsed_topology(str(annotations[ANNOTATION_TOPOLOGY]))
        except TopologyError as exc:
            problem = f"topology annotation unreadable: {exc}"
            log.warning("node %s: %s", name, problem)
    report = None
    if ANNOTATION_FREE_GPUS in annotations:
        try:
            report = FreeReport.from_json(str(annotations[ANNOTATION_FREE_GPUS]))
        except ValueError as exc:
            log.warning("node %s: %s; replaying bound pods instead", name, exc)

    pod_list = tuple(sorted(pods, key=lambda p: (p.bound_at or 0.0, p.key)))
    free, assumed = _derive_free(topology, report, pod_list, labels)
    holders = {g: pod for pod, gpus in assumed for g in gpus}
    spec = node.get("spec") or {}
    taints = tuple(
        {str(k): str(v) for k, v in t.items() if v is not None}
        for t in spec.get("taints") or []
        if isinstance(t, Mapping)
    )
    return NodeState(
        name,
        labels,
        allocatable,
        capacity,
        topology,
        problem,
        report,
        pod_list,
        free,
        assumed,
        holders=holders,
        taints=taints,
        unschedulable=bool(spec.get("unschedulable")),
    )


_topologies: dict[str, GpuTopology] = {}


def _parsed_topology(text: str) -> GpuTopology:
    """One shared, immutable GpuTopology per distinct annotation: a fleet has a few machine types, and
    a graph per node would be thousands of long-lived objects for the garbage collector to walk."""
    topo = _topologies.get(text)
    if topo is None:
        topo = GpuTopology.from_json(text)
        if len(_topologies) > 4096:
            _topologies.clear()
        _topologies[text] = topo
    return topo


def _derive_free(
    topo: GpuTopology | None, report: FreeReport | None, pods: tuple[BoundPod, ...], labels: Mapping[str, str]
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
            placed = best_placement(topo, pod.request.gpus, free=sorted(free), policy="nvidia-best-effort")
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
        self._nodes: dict[str, NodeState] = {}
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self.synced_at: float | None = None
        self._listeners: list[Callable[[Iterable[str] | None], None]] = []

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
