"""What the advisor knows of one node: its GPUs, how they are wired, which are free, its GPU pods.

A :class:`NodeState` is immutable: every change to a node makes a new one, so whatever was worked out
for a state (its ``memo``) lives and dies with it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from extender.cluster.shares import GpuShares
from extender.model.amd_labels import vram_mib
from extender.model.gpu_share import ALIBABA_MODEL
from extender.model.gpu_vendor import AMD, NVIDIA, VENDORS, GpuVendor
from extender.model.mig_profiles import MIG_PRODUCTS, profile_memory_gb
from extender.model.pods import MIG_PREFIX, PodRequest
from extender.model.topology import GpuTopology

__all__ = ["BoundPod", "FreeReport", "NodeState", "format_time", "parse_time"]

# GPU Feature Discovery labels this model reads.
LABEL_PRODUCT = "nvidia.com/gpu.product"
LABEL_MEMORY = "nvidia.com/gpu.memory"
LABEL_REPLICAS = "nvidia.com/gpu.replicas"
LABEL_SHARING = "nvidia.com/gpu.sharing-strategy"
LABEL_MIG_STRATEGY = "nvidia.com/mig.strategy"


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
    holds_all: bool = False  # its GPU counts could not be read: taken to hold every GPU of its node
    assigned: tuple[str, ...] = ()  # the GPUs its sharing convention's annotation names (``shares``)

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
    # What scoring already worked out for this very node state (verdicts by pod shape, plans by
    # request and policy; see extender.scoring). It lives and dies with the state: a change makes a
    # new NodeState with an empty memo.
    memo: dict[object, Any] = field(default_factory=dict, compare=False, repr=False)
    # Physical GPU → pod, for the GPUs whose holder this model knows (the assumed placements).
    holders: dict[int, str] = field(default_factory=dict, compare=False, repr=False)
    taints: tuple[Mapping[str, str], ...] = ()  # spec.taints: {key, value, effect}
    unschedulable: bool = False
    shares: GpuShares | None = None  # free milli per GPU, for a node that offers GPU sharing
    cpu_allocatable: int | None = None  # milli-CPU; None when the node does not say
    memory_allocatable: int | None = None  # MiB
    cpu_requested: int = 0  # by every pod bound here, GPU or not
    memory_requested: int = 0
    # What its bound pods hold more of than it has, one line each (``overcommit``); empty: not over-committed.
    overcommitted: tuple[str, ...] = ()

    @property
    def gpu_model(self) -> str | None:
        """The GPU model: Alibaba's card-model label, GFD's product, or what the sharing fields say."""
        model = self.labels.get(ALIBABA_MODEL) or self.product
        return model or (self.shares.model if self.shares else None)

    @property
    def cpu_free(self) -> int | None:
        return None if self.cpu_allocatable is None else self.cpu_allocatable - self.cpu_requested

    @property
    def memory_free(self) -> int | None:
        return None if self.memory_allocatable is None else self.memory_allocatable - self.memory_requested

    # -- GFD labels and resources ------------------------------------------------------------------

    @property
    def gpu_vendor(self) -> GpuVendor:
        """Whose GPUs the node offers: the vendor whose resource it has, else whose slices (MIG, AMD
        partitions) it has, else its topology's."""
        for vendor in VENDORS:
            if self.allocatable.get(vendor.resource):
                return vendor
        for vendor in VENDORS:
            if any(n and k.startswith(vendor.domain) for k, n in self.allocatable.items()):
                return vendor
        return self.topology.vendor if self.topology is not None else NVIDIA

    @property
    def product(self) -> str | None:
        for label in (LABEL_PRODUCT, AMD.product_label):  # GFD's, else the AMD node labeller's
            if label in self.labels:
                return self.labels[label]
        products = {g.product for g in self.topology.gpus} if self.topology else set()
        return products.pop() if len(products) == 1 else None

    @property
    def gpu_memory_mib(self) -> int | None:
        """Memory of one physical GPU: GFD's label, else the AMD node labeller's, else the topology's."""
        try:
            return int(self.labels[LABEL_MEMORY])
        except (KeyError, ValueError):
            pass
        if (labelled := vram_mib(self.labels)) is not None:
            return labelled
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
    def mps(self) -> bool:
        """NVIDIA's device plugin ``sharing.mps``: each GPU is ``replicas`` clients, each with a hard memory
        limit of total / replicas, and (since v0.15) no pod may hold more than one replica."""
        return self.replicas > 1 and self.labels.get(LABEL_SHARING, "") == "mps"

    @property
    def mig_single(self) -> str | None:
        """The MIG profile every ``nvidia.com/gpu`` is, under the ``single`` MIG strategy (GFD's product
        label ends ``-MIG-<profile>``); None elsewhere."""
        if self.labels.get(LABEL_MIG_STRATEGY) != "single":
            return None
        product = self.labels.get(LABEL_PRODUCT, "")
        _, sep, profile = product.rpartition("-MIG-")
        return profile if sep and profile_memory_gb(profile) else None

    @property
    def sharing(self) -> str:
        """What one ``nvidia.com/gpu`` is here: a whole GPU, a time-sliced or MPS replica, or a MIG slice."""
        if self.mig_single:
            return "MIG slice"
        if self.mps:
            return "MPS replica"
        return "time-sliced replica" if self.time_sliced else "whole GPU"

    @property
    def physical_gpus(self) -> int:
        """Physical GPUs behind the node's ``nvidia.com/gpu`` count (replicas and slices counted once)."""
        if self.topology is not None and (self.time_sliced or self.mps):
            return len(self.topology.indices)
        if self.time_sliced or self.mps:
            return max(1, self.gpu_total // self.replicas)
        profile = self.mig_single
        if profile:
            per_gpu = max((p.count for m in MIG_PRODUCTS for p in m.profiles if p.name == profile), default=1)
            return max(1, -(-self.gpu_total // per_gpu))
        return self.gpu_total

    @property
    def slot_memory_mib(self) -> int | None:
        """The memory one ``nvidia.com/gpu`` gives a pod: the GPU's; a time-sliced replica shares all of it;
        an MPS client is capped at total / replicas; a MIG slice has its profile's."""
        memory = self.gpu_memory_mib
        profile = self.mig_single
        if profile:
            named = int(profile_memory_gb(profile) * 1024)
            return min(memory, named) if memory else named
        if memory and self.mps:
            return memory // self.replicas
        return memory

    @property
    def gpu_total(self) -> int:
        return self.allocatable.get(self.gpu_vendor.resource, 0)

    @property
    def gpu_used(self) -> int:
        return sum(p.request.gpus for p in self.pods)

    @property
    def gpu_free_count(self) -> int:
        return max(0, self.gpu_total - self.gpu_used)

    @property
    def free_now(self) -> int:
        """Free GPUs by the tighter of the two views: allocation counts, and the agent's report."""
        if self.free_gpus is not None and self.sharing == "whole GPU":
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
