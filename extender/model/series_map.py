"""Which node, GPU and pod a DCGM exporter series is about, from its labels and the cluster model.

Real clusters label the same exporter series in different ways, so the node is looked for in this
order, the first that names something the cluster model knows winning:

1. ``node``, then ``kubernetes_node``: added by a scrape config or ServiceMonitor relabeling.
2. ``Hostname``/``hostname`` naming a Node: the exporter runs with hostNetwork.
3. ``Hostname``/``hostname`` naming a pod: the GPU Operator's DaemonSet default, where the exporter
   reports its own pod name; the pod's ``spec.nodeName`` is the node.
4. ``instance`` naming a Node (GPU Operator relabeling), or an exporter pod's IP[:port].

The GPU is its ``UUID``/``uuid`` (AMD's exporter: ``gpu_uuid``), else its ``gpu`` index (AMD: ``gpu_id``),
else its ``device`` (``nvidia3``). A MIG
series (``GPU_I_ID``, ``GPU_I_PROFILE``) is about one instance of that GPU.

The pod holding the GPU is ``exported_namespace``/``exported_pod`` (a ServiceMonitor with
``honorLabels: false`` renames the exporter's labels so), else ``namespace``/``pod``, else the 1.x
``pod_namespace``/``pod_name``; never the exporter pod itself, which a scrape adds as a target label.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from extender.model.pods import PodSpecError, pod_request

__all__ = [
    "Directory",
    "PodPlace",
    "SeriesMiss",
    "SeriesPlace",
    "directory",
    "directory_of_places",
    "label_shape",
    "place_series",
    "pod_place",
]

_DEVICE = re.compile(r"^nvidia(\d+)$")
_HOLDER_LABELS = (
    ("exported_namespace", "exported_pod", "exported_container"),
    ("namespace", "pod", "container"),
    ("pod_namespace", "pod_name", "container_name"),
)
_RELABEL_FIX = (
    "relabel the DCGM exporter's scrape so the node is a label: in its ServiceMonitor add "
    "relabelings [{sourceLabels: [__meta_kubernetes_pod_node_name], targetLabel: node}] "
    "(docs/telemetry.md)"
)


@dataclass(frozen=True)
class PodPlace:
    namespace: str
    name: str
    node: str
    ip: str | None
    asks_gpu: bool

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Directory:
    """What the cluster model knows for placing series: its nodes, and its pods by name and by IP.

    With no nodes known at all (no cluster model to check against) the node labels are taken at
    their word, and ``instance`` is not read.
    """

    nodes: frozenset[str] = frozenset()
    pods_by_name: Mapping[str, PodPlace] = field(default_factory=dict)
    pods_by_ip: Mapping[str, PodPlace] = field(default_factory=dict)
    pods_by_key: Mapping[str, PodPlace] = field(default_factory=dict)
    gpu_memory_mib: Mapping[str, int] = field(default_factory=dict)  # node → its largest GPU's memory, where known

    def knows_node(self, name: str) -> bool:
        return name in self.nodes if self.nodes else True


def pod_place(pod: Mapping[str, Any]) -> PodPlace | None:
    """Where a Pod object runs (None unless bound and not finished)."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    node, name = spec.get("nodeName"), meta.get("name")
    if not node or not name or status.get("phase") in ("Succeeded", "Failed"):
        return None
    try:
        asks_gpu = pod_request(pod).wants_gpu
    except PodSpecError:
        asks_gpu = True  # the kubelet accepted it; it may hold GPUs
    ip = status.get("podIP")
    return PodPlace(str(meta.get("namespace") or "default"), str(name), str(node), str(ip) if ip else None, asks_gpu)


def directory(nodes: Iterable[str], pods: Iterable[Mapping[str, Any]]) -> Directory:
    """The directory of a cluster model: node names, and the bound pods (Pod objects) on them."""
    return directory_of_places(nodes, [p for p in (pod_place(pod) for pod in pods) if p is not None])


def directory_of_places(
    nodes: Iterable[str], places: Iterable[PodPlace], gpu_memory_mib: Mapping[str, int] | None = None
) -> Directory:
    places = list(places)
    by_name: dict[str, PodPlace] = {}
    for place in places:
        by_name.setdefault(place.name, place)  # pod names repeat across namespaces only by accident
    return Directory(
        frozenset(nodes),
        by_name,
        {p.ip: p for p in places if p.ip},
        {p.key: p for p in places},
        gpu_memory_mib or {},
    )


@dataclass(frozen=True)
class SeriesPlace:
    node: str
    via: str  # which label named the node, e.g. "Hostname (exporter pod)"
    uuid: str | None
    index: int | None
    mig: tuple[str, str] | None = None  # (GPU_I_ID, GPU_I_PROFILE)
    pod: str | None = None  # "namespace/name" holding the GPU
    container: str | None = None

    @property
    def keys(self) -> tuple[str, ...]:
        """Board keys: by UUID and by index for a whole GPU, one key for a MIG instance."""
        if self.mig is not None:
            gpu = f"#{self.index}" if self.index is not None else str(self.uuid)
            return (f"{gpu}:mig{self.mig[0]}",)
        keys = [self.uuid] if self.uuid else []
        if self.index is not None:
            keys.append(f"#{self.index}")
        return tuple(keys)


@dataclass(frozen=True)
class SeriesMiss:
    shape: tuple[str, ...]
    reason: str
    fix: str


def label_shape(labels: Mapping[str, str]) -> tuple[str, ...]:
    """The label names a series carries (with a value): one shape per way of scraping."""
    return tuple(sorted(k for k, v in labels.items() if v and k != "__name__"))


def _host(instance: str) -> str:
    """``10.0.0.5:9400`` → ``10.0.0.5``; ``[fd00::5]:9400`` → ``fd00::5``; a bare name stays."""
    if instance.startswith("["):
        return instance[1:].partition("]")[0]
    host, sep, port = instance.rpartition(":")
    return host if sep and port.isdigit() and ":" not in host else instance


def _node_of(labels: Mapping[str, str], where: Directory) -> tuple[str, str, PodPlace | None] | None:
    """(node, via, the exporter pod when a label named it)."""
    for name in ("node", "kubernetes_node", "Hostname", "hostname"):
        value = labels.get(name)
        if value and where.knows_node(value):
            return value, name, None
    if not where.nodes:
        return None
    for name in ("Hostname", "hostname"):
        pod = where.pods_by_name.get(labels.get(name) or "")
        if pod is not None and pod.node in where.nodes:
            return pod.node, f"{name} (exporter pod)", pod
    instance = labels.get("instance") or ""
    host = _host(instance)
    if host and host in where.nodes:
        return host, "instance", None
    pod = where.pods_by_ip.get(host)
    if pod is not None and pod.node in where.nodes:
        return pod.node, "instance (exporter pod IP)", pod
    return None


def _gpu_of(labels: Mapping[str, str]) -> tuple[str | None, int | None]:
    uuid = labels.get("UUID") or labels.get("uuid") or labels.get("gpu_uuid") or None
    index: int | None = None
    raw = labels.get("gpu") or labels.get("gpu_id") or ""
    if raw.isdigit():
        index = int(raw)
    else:
        m = _DEVICE.match(labels.get("device") or "")
        index = int(m.group(1)) if m else None
    return uuid, index


def _holder(labels: Mapping[str, str], where: Directory, exporter: PodPlace | None) -> tuple[str | None, str | None]:
    """("namespace/name", container) of the pod holding the GPU, or (None, None)."""
    hostnames = {labels.get("Hostname"), labels.get("hostname")}
    for ns_label, pod_label, container_label in _HOLDER_LABELS:
        pod, namespace = labels.get(pod_label), labels.get(ns_label)
        if not pod or not namespace:
            continue
        key = f"{namespace}/{pod}"
        known = where.pods_by_key.get(key)
        # A scrape adds the exporter's own pod as a target label: that pod is not using the GPU.
        if pod in hostnames or (exporter is not None and exporter.key == key) or (known and not known.asks_gpu):
            continue
        return key, labels.get(container_label) or None
    return None, None


def place_series(labels: Mapping[str, str], where: Directory) -> SeriesPlace | SeriesMiss:
    """Where a series belongs, or why it belongs nowhere and which relabeling would fix that."""
    shape = label_shape(labels)
    found = _node_of(labels, where)
    if found is None:
        named = {k: labels[k] for k in ("node", "kubernetes_node", "Hostname", "hostname", "instance") if labels.get(k)}
        told = ", ".join(f"{k}={v!r}" for k, v in named.items()) or "no node, Hostname or instance label"
        return SeriesMiss(shape, f"names no node or exporter pod of the cluster model ({told})", _RELABEL_FIX)
    node, via, exporter = found
    uuid, index = _gpu_of(labels)
    if uuid is None and index is None:
        return SeriesMiss(
            shape,
            "names no GPU (no UUID, gpu or device label)",
            "keep the exporter's UUID and gpu labels: do not drop them in metricRelabelings",
        )
    mig_id = labels.get("GPU_I_ID") or ""
    mig = (mig_id, labels.get("GPU_I_PROFILE") or "") if mig_id else None
    pod, container = _holder(labels, where, exporter)
    return SeriesPlace(node, via, uuid, index, mig, pod, container)
