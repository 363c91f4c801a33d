"""Cluster snapshots (a YAML or JSON file) and the built-in simulated cluster.

A snapshot is either a Kubernetes ``List`` of Node and Pod objects (``kubectl get nodes,pods -A -o
yaml``, or ``gpu-advisor snapshot``) or this shorter form::

    nodes:
      - name: dgx-a                     # required
        machine: dgx1-v100              # a bundled machine, or
        topology: {...} | "GPU0 ..."    # a topology JSON document or nvidia-smi topo -m text
        labels: {nvidia.com/gpu.product: Tesla-V100-SXM2-16GB}
        gpus: 8                         # nvidia.com/gpu allocatable (default: GPUs in the topology × replicas)
                                        #   (amd.com/gpu when the machine is an AMD one)
        capacity: 8                     # nvidia.com/gpu capacity (default: gpus)
        mig: {1g.5gb: 7}                # nvidia.com/mig-<profile> allocatable
        free: [4, 5, 6, 7]              # free GPUs as the node agent last reported them (optional)
        free_at: "2026-12-02T11:00:00Z" # when (default: the snapshot's time)
        taints: [{key: dedicated, value: ml, effect: NoSchedule}]
        telemetry:                      # live readings (optional)
          - {gpu: 0, sm_util: 3, memory_used_mib: 512, memory_total_mib: 16384,
             pod: ml/train, sm_history: [0, 95, 2, 97]}   # pod and history: optional
    pods:
      - {name: train, namespace: ml, node: dgx-a, gpus: 4, mig: {1g.5gb: 1},
         gpu_memory: 20Gi, bound_at: "2026-12-02T10:00:00Z"}
      - {name: waiting, namespace: ml, gpus: 8, node_selector: {nvidia.com/gpu.product: H100}}  # no node: pending
      - {name: rocm, namespace: ml, gpus: 4, resource: amd.com/gpu}   # resource: nvidia.com/gpu unless named
    time: "2026-12-02T11:00:00Z"        # the snapshot's time (default: now)

Both forms become Node and Pod objects and go through the same code as the live cluster.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from extender.cluster.dra_view import DRA_KINDS, NO_DRA, DraObjects, node_through_slices, pod_through_claims
from extender.cluster.state import (
    ANNOTATION_FREE_GPUS,
    ANNOTATION_TOPOLOGY,
    BoundPod,
    ClusterState,
    FreeReport,
    bound_pod,
    format_time,
    node_state,
    parse_time,
)
from extender.errors import InputError
from extender.model.machines import bundled_machines
from extender.model.pods import ANNOTATION_GPU_MEMORY, GPU_RESOURCE, MIG_PREFIX
from extender.model.readings import GpuReading, TelemetryBoard
from extender.model.smi_topo import parse_topo_matrix, parse_topology_text
from extender.model.topology import GpuTopology, TopologyError
from extender.sources.documents import load_document
from extender.sources.nvl72 import nvl72_rack

__all__ = ["Snapshot", "SnapshotError", "load_snapshot", "parse_snapshot", "simulated_cluster"]


class SnapshotError(InputError):
    """A snapshot file could not be used; the message says what and where."""


@dataclass
class Snapshot:
    nodes: list[dict[str, Any]]  # Node objects
    pods: list[dict[str, Any]]  # Pod objects
    readings: dict[tuple[str, str], GpuReading]
    at: float
    dra: DraObjects = NO_DRA  # the DRA claims pending pods may name (``dra_view``)

    def cluster(self, source: str) -> ClusterState:
        by_node: dict[str, list[BoundPod]] = {}
        for pod in self.pods:
            found = bound_pod(pod)
            if found:
                by_node.setdefault(found[0], []).append(found[1])
        state = ClusterState(source)
        names = [str((n.get("metadata") or {}).get("name", "")) for n in self.nodes]
        state.replace_all(
            node_state(n, by_node.get(name, ()), state.machines) for n, name in zip(self.nodes, names, strict=True)
        )
        state.dra = self.dra
        state.mark_ready(self.at)
        return state

    def telemetry(self, max_age_s: float) -> TelemetryBoard:
        board = TelemetryBoard(max_age_s)
        board.replace(self.readings, self.at)
        return board


@functools.lru_cache(maxsize=64)
def _bundled(name: str) -> GpuTopology:
    # Parsed once per machine: a 5,000-node snapshot names a handful, and parsing each node's matrix
    # anew was most of its load time (a topology is immutable, so the nodes may share it).
    machines = bundled_machines()
    if name not in machines:
        raise SnapshotError(f"no bundled machine {name!r}; choose one of {', '.join(machines)}")
    return parse_topo_matrix(machines[name])


@functools.lru_cache(maxsize=256)
def _annotation_text(topo: GpuTopology) -> str:
    return topo.to_json()


def _topology(entry: Mapping[str, Any], where: str) -> GpuTopology | None:
    try:
        if "machine" in entry:
            return _bundled(str(entry["machine"]))
        raw = entry.get("topology")
        if raw is None:
            return None
        if isinstance(raw, Mapping):
            return GpuTopology.from_dict(raw)
        return parse_topology_text(str(raw))
    except TopologyError as exc:
        raise SnapshotError(f"{where}: {exc}") from None


@functools.lru_cache(maxsize=1024)
def _gpu_key(index: int) -> str:
    """``#index``, one string per index for the whole snapshot (not one per node and GPU)."""
    return f"#{index}"


def _read_telemetry(entries: Any, name: str, where: str, readings: dict[tuple[str, str], GpuReading]) -> None:
    """A short node's ``telemetry`` list into ``readings``, keyed (node, "#index")."""
    for m, reading in enumerate(entries):
        if not isinstance(reading, Mapping) or not isinstance(reading.get("gpu"), int):
            raise SnapshotError(f"{where}.telemetry[{m}]: each reading needs an integer 'gpu'")
        total = reading.get("memory_total_mib")
        used = reading.get("memory_used_mib")
        readings[(name, _gpu_key(reading["gpu"]))] = GpuReading(
            sm_util=reading.get("sm_util"),
            memory_used_mib=used,
            memory_free_mib=(total - used) if total is not None and used is not None else None,
            at=parse_time(reading.get("at")),
            pod=reading.get("pod"),
            sm_history=tuple(float(x) for x in reading.get("sm_history") or ()),
        )


def _short_node(entry: Any, n: int, at: float, readings: dict[tuple[str, str], GpuReading]) -> dict[str, Any]:
    where = f"nodes[{n}]"
    if not isinstance(entry, Mapping) or not entry.get("name"):
        raise SnapshotError(f"{where}: a node needs at least a 'name'")
    name = str(entry["name"])
    labels = {str(k): str(v) for k, v in (entry.get("labels") or {}).items()}
    topo = _topology(entry, where)
    annotations: dict[str, str] = {}
    resource = topo.vendor.resource if topo is not None else GPU_RESOURCE  # amd.com/gpu for an AMD machine
    if topo is not None:
        annotations[ANNOTATION_TOPOLOGY] = _annotation_text(topo)
        if resource == GPU_RESOURCE:
            labels.setdefault("nvidia.com/gpu.count", str(len(topo.indices)))
    replicas = int(labels.get("nvidia.com/gpu.replicas", "1") or 1)
    try:
        gpus = int(entry.get("gpus", len(topo.indices) * replicas if topo else 0))
        capacity = int(entry.get("capacity", gpus))
        mig = {MIG_PREFIX + str(p): int(c) for p, c in (entry.get("mig") or {}).items()}
    except (TypeError, ValueError) as exc:
        raise SnapshotError(f"{where}: gpus, capacity and mig counts must be whole numbers ({exc})") from None
    if "free" in entry:
        free = entry["free"]
        if not isinstance(free, list) or not all(isinstance(i, int) for i in free):
            raise SnapshotError(f"{where}: 'free' must be a list of GPU indices")
        free_at = parse_time(entry.get("free_at")) or at
        annotations[ANNOTATION_FREE_GPUS] = FreeReport(tuple(sorted(free)), free_at).to_json()
    _read_telemetry(entry.get("telemetry") or [], name, where, readings)
    resources = {resource: str(gpus), **{k: str(v) for k, v in mig.items()}}
    capacities = {**resources, resource: str(capacity)}
    taints = entry.get("taints") or []
    if not isinstance(taints, list) or not all(isinstance(t, Mapping) and t.get("key") for t in taints):
        raise SnapshotError(f"{where}: 'taints' must be a list of {{key, value, effect}}")
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {"taints": [dict(t) for t in taints]},
        "status": {"allocatable": resources, "capacity": capacities},
    }


def _short_pod(entry: Any, n: int, at: float) -> dict[str, Any]:
    where = f"pods[{n}]"
    if not isinstance(entry, Mapping) or not entry.get("name"):
        raise SnapshotError(f"{where}: a pod needs a 'name' (and the 'node' it is bound to, unless pending)")
    limits: dict[str, str] = {}
    if entry.get("gpus"):
        limits[str(entry.get("resource") or GPU_RESOURCE)] = str(entry["gpus"])
    for profile, count in (entry.get("mig") or {}).items():
        limits[MIG_PREFIX + str(profile)] = str(count)
    annotations = {ANNOTATION_GPU_MEMORY: str(entry["gpu_memory"])} if entry.get("gpu_memory") else {}
    bound_at = entry.get("bound_at") or format_time(at - 60)
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": {"limits": limits}}]}
    if entry.get("node"):
        spec["nodeName"] = str(entry["node"])
    if entry.get("node_selector"):
        spec["nodeSelector"] = dict(entry["node_selector"])
    if "priority" in entry:
        spec["priority"] = int(entry["priority"])
    bound = {
        "phase": "Running",
        "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": bound_at}],
    }
    pending = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    }
    meta = {
        "name": str(entry["name"]),
        "namespace": str(entry.get("namespace", "default")),
        "annotations": annotations,
        "labels": dict(entry.get("labels") or {}),
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": bound if entry.get("node") else pending,
    }


def parse_snapshot(doc: Any, now: float | None = None) -> Snapshot:
    if not isinstance(doc, Mapping):
        raise SnapshotError("a snapshot must be a mapping with 'nodes' (and 'pods'), or a Kubernetes List")
    at = parse_time(doc.get("time")) or (now if now is not None else time.time())
    readings: dict[tuple[str, str], GpuReading] = {}
    if "items" in doc:
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise SnapshotError("'items' must be a list of Node and Pod objects")
        # GPUs published and claimed through DRA, written as the model reads device-plugin GPUs.
        dra = DraObjects.read(i for i in items if isinstance(i, Mapping) and i.get("kind") in DRA_KINDS)
        nodes = [
            dict(node_through_slices(i, dra, at)) for i in items if isinstance(i, Mapping) and i.get("kind") == "Node"
        ]
        pods = [dict(pod_through_claims(i, dra)) for i in items if isinstance(i, Mapping) and i.get("kind") == "Pod"]
        return Snapshot(nodes, pods, readings, at, dra)
    raw_nodes = doc.get("nodes")
    if not isinstance(raw_nodes, list):
        raise SnapshotError("a snapshot needs a list 'nodes'")
    raw_pods = doc.get("pods") or []
    if not isinstance(raw_pods, list):
        raise SnapshotError("'pods' must be a list")
    nodes = [_short_node(e, n, at, readings) for n, e in enumerate(raw_nodes)]
    names = [str(n["metadata"]["name"]) for n in nodes]
    if len(set(names)) != len(names):
        raise SnapshotError("two nodes share a name")
    pods = [_short_pod(e, n, at) for n, e in enumerate(raw_pods)]
    return Snapshot(nodes, pods, readings, at)


def load_snapshot(path: str | Path, now: float | None = None) -> Snapshot:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"cannot read snapshot {path}: {exc}") from None
    try:
        doc = load_document(text)
    except yaml.YAMLError as exc:
        raise SnapshotError(f"snapshot {path} is not YAML or JSON: {exc}") from None
    try:
        return parse_snapshot(doc, now)
    except SnapshotError as exc:
        raise SnapshotError(f"snapshot {path}: {exc}") from None


def simulated_cluster(now: float | None = None, rack: bool = False) -> Snapshot:
    """A small cluster of real machines, some GPUs held, with synthetic telemetry; runs anywhere.

    Seven nodes (``simulated_cluster.json`` beside this module): two DGX-1 V100 and an HGX H100 with
    some GPUs held, an L40S PCIe box, an A100 in mixed MIG mode and four time-sliced T4s. GPU 3 of
    the H100 is free by the kubelet's count yet 61 GiB of its VRAM is held: a leftover process.
    Beside them an 8×MI300X AMD node on XGMI (``amd.com/gpu``), two of its GPUs held.
    """
    text = resources.files(__package__).joinpath("simulated_cluster.json").read_text(encoding="utf-8")
    doc = json.loads(text)
    if rack:  # ``simulated-rack``: the same nodes beside a GB200 NVL72 rack (``nvl72``)
        doc["nodes"] += nvl72_rack()
    return parse_snapshot(doc, now=now if now is not None else time.time())
