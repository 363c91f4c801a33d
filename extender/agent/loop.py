"""The node agent: each GPU node publishes how its GPUs are wired and which are free.

- Topology from NVML, read at start and again when the MIG layout changes.
- Allocations from the kubelet's PodResources API (gRPC on a unix socket): free = allocatable − the
  devices assigned to containers, for ``nvidia.com/gpu``; device IDs are GPU UUIDs (time-sliced replicas
  append ``::N``), mapped to indices through the topology.
- Both go to its own Node as the annotations ``gpu-advisor.io/topology`` and ``gpu-advisor.io/free-gpus``
  by a JSON merge patch, only when their content changed, at most once per ``min_interval_s`` however
  fast pods come and go, with exponential backoff after errors.
- ``/metrics`` serves live NVML samples per GPU under DCGM exporter's names and labels
  (``DCGM_FI_DEV_GPU_UTIL``, ``DCGM_FI_DEV_FB_USED``/``FREE`` in MiB; ``gpu``, ``UUID``, ``modelName``,
  ``Hostname``, and ``namespace``/``pod``/``container`` of the holder), so the extender can scrape agents
  where no DCGM exporter runs. ``/healthz`` and ``/readyz`` beside it.
- No GPU, no NVML or no kubelet socket: one log line per distinct problem and a non-ready status; the
  agent keeps retrying instead of crash-looping.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from extender.cluster.state import ANNOTATION_FREE_GPUS, ANNOTATION_TOPOLOGY, FreeReport
from extender.model.pods import GPU_RESOURCE
from extender.model.topology import GpuTopology
from extender.sources.nvml import NvmlUnavailable, discover_topology, mig_layout, sample_gpus

__all__ = ["Agent", "AgentStatus", "Allocation", "PodResourcesClient", "free_gpu_indices"]

log = logging.getLogger(__name__)

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
        self._stub = api_pb2_grpc.PodResourcesListerStub(self._channel)  # type: ignore[no-untyped-call]

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


def _uuid(device_id: str) -> str:
    # Time-slicing advertises each GPU N times as "<uuid>::<replica>"; the GPU is the uuid.
    return device_id.split("::", 1)[0]


def free_gpu_indices(topology: GpuTopology, allocation: Allocation) -> tuple[int, ...]:
    """Physical GPUs the kubelet may still hand out: allocatable, and no replica of them assigned."""
    index_of = {g.uuid: g.index for g in topology.gpus if g.uuid}
    allocatable = {index_of[_uuid(d)] for d in allocation.allocatable if _uuid(d) in index_of}
    held = {index_of[_uuid(d)] for d in allocation.holders if _uuid(d) in index_of}
    return tuple(sorted(allocatable - held))


@dataclass
class AgentStatus:
    ready: bool = False
    reason: str = "starting"
    writes: int = 0
    last_write: float | None = None
    problems: set[str] = field(default_factory=set)


class _DcgmNamedCollector(Collector):
    """Live NVML samples per GPU, named and labelled as DCGM exporter does."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def collect(self) -> Iterable[GaugeMetricFamily]:
        agent = self.agent
        labels = ["gpu", "UUID", "device", "modelName", "Hostname", "namespace", "pod", "container"]
        util = GaugeMetricFamily("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", labels=labels)
        used = GaugeMetricFamily("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", labels=labels)
        free = GaugeMetricFamily("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", labels=labels)
        topo, nvml = agent.topology, agent.nvml
        if topo is None or nvml is None:
            return [util, used, free]
        by_uuid = {_uuid(d): h for d, h in (agent.allocation.holders.items() if agent.allocation else [])}
        try:
            samples = sample_gpus(nvml)
        except Exception as exc:  # a failed scrape is an empty scrape, not a dead endpoint
            log.warning("NVML sample failed: %s", exc)
            return [util, used, free]
        for s in samples:
            gpu = topo.gpu(s.index) if s.index in topo.indices else None
            holder = by_uuid.get(s.uuid or "", ("", "", ""))
            values = [
                str(s.index),
                s.uuid or "",
                f"nvidia{s.index}",
                (gpu.product if gpu else None) or "",
                agent.node,
                holder[0],
                holder[1],
                holder[2],
            ]
            if s.sm_util_percent is not None:
                util.add_metric(values, s.sm_util_percent)
            if s.memory_used_mib is not None and s.memory_total_mib is not None:
                used.add_metric(values, s.memory_used_mib)
                free.add_metric(values, s.memory_total_mib - s.memory_used_mib)
        return [util, used, free]


class Agent:
    def __init__(
        self,
        node: str,
        api: Any,  # kubernetes.client.CoreV1Api
        pod_resources: Callable[[], PodResourcesClient],
        load_nvml: Callable[[], ModuleType],
        min_interval_s: float = 10.0,
        sysfs: Path = Path("/sys"),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.node = node
        self.api = api
        self._pod_resources_factory = pod_resources
        self._pod_resources: PodResourcesClient | None = None
        self._load_nvml = load_nvml
        self.min_interval_s = min_interval_s
        self.sysfs = sysfs
        self.clock = clock
        self.nvml: ModuleType | None = None
        self.topology: GpuTopology | None = None
        self._mig_signature: tuple[Any, ...] | None = None
        self.allocation: Allocation | None = None
        self.status = AgentStatus()
        self._written: tuple[str, tuple[int, ...]] | None = None  # (topology JSON, free) last written
        self._retry_at = 0.0
        self._backoff = 1.0
        self._stop = threading.Event()
        self.registry = CollectorRegistry()
        self.registry.register(_DcgmNamedCollector(self))

    # -- the pieces ----------------------------------------------------------------------------

    def _problem(self, key: str, message: str) -> None:
        """Not ready, said once per distinct problem rather than on every loop."""
        self.status.ready, self.status.reason = False, message
        if key not in self.status.problems:
            self.status.problems.add(key)
            log.error("%s (will keep retrying)", message)

    def _ensure_topology(self) -> bool:
        try:
            if self.nvml is None:
                self.nvml = self._load_nvml()
            signature = mig_layout(self.nvml)
            if self.topology is None or signature != self._mig_signature:
                if self.topology is not None:
                    log.info("MIG layout changed: reading the topology again")
                self.topology = discover_topology(self.nvml, self.sysfs)
                self._mig_signature = signature
            return True
        except NvmlUnavailable as exc:
            self._problem("nvml", f"no GPU topology: {exc}")
        except Exception as exc:
            self._problem("nvml-call", f"NVML failed: {exc}")
        return False

    def _read_allocation(self) -> bool:
        try:
            if self._pod_resources is None:
                self._pod_resources = self._pod_resources_factory()
            self.allocation = self._pod_resources.allocation()
            return True
        except Exception as exc:
            self._problem("kubelet", f"kubelet PodResources API unreachable: {_short(exc)}")
            self._pod_resources = None
            return False

    def step(self) -> bool:
        """One look at NVML and the kubelet, and a write if something changed; True when it wrote."""
        now = self.clock()
        if not self._ensure_topology() or not self._read_allocation():
            return False
        assert self.topology is not None and self.allocation is not None
        self.status.ready, self.status.reason = True, "ok"
        self.status.problems.clear()
        content = (self.topology.to_json(), free_gpu_indices(self.topology, self.allocation))
        if content == self._written:
            return False
        if now < self._retry_at:
            return False  # rate limit or backoff: the newest content goes out when the window opens
        annotations = {ANNOTATION_TOPOLOGY: content[0], ANNOTATION_FREE_GPUS: FreeReport(content[1], now).to_json()}
        try:
            self.api.patch_node(
                self.node, {"metadata": {"annotations": annotations}}, _content_type="application/merge-patch+json"
            )
        except Exception as exc:
            log.warning("annotating node %s failed (%s); retrying in %.0f s", self.node, _short(exc), self._backoff)
            self._retry_at = now + self._backoff
            self._backoff = min(self._backoff * 2, 300.0)
            return False
        self._written = content
        self._backoff = 1.0
        self._retry_at = now + self.min_interval_s
        self.status.writes += 1
        self.status.last_write = now
        log.info("node %s annotated: %d GPUs, free %s", self.node, len(self.topology.indices), list(content[1]))
        return True

    # -- running ---------------------------------------------------------------------------------

    def run(self, poll_s: float = 2.0) -> None:
        while not self._stop.is_set():
            self.step()
            self._stop.wait(poll_s if self.status.ready else max(poll_s, 10.0))

    def stop(self) -> None:
        self._stop.set()
        if self._pod_resources is not None:
            self._pod_resources.close()

    def serve_http(self, host: str, port: int) -> ThreadingHTTPServer:
        """/metrics (DCGM-named GPU samples), /healthz, /readyz on a background thread."""
        agent = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/metrics":
                    status, body, kind = 200, generate_latest(agent.registry), "text/plain; version=0.0.4"
                elif self.path == "/healthz":
                    status, body, kind = 200, b'{"status":"ok"}', "application/json"
                elif self.path == "/readyz":
                    doc = {"ready": agent.status.ready, "reason": agent.status.reason, "writes": agent.status.writes}
                    status, body, kind = (
                        (200 if agent.status.ready else 503),
                        json.dumps(doc).encode(),
                        "application/json",
                    )
                else:
                    status, body, kind = 404, b'{"detail":"not found"}', "application/json"
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server = ThreadingHTTPServer((host, port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, name="agent-http", daemon=True).start()
        return server


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__
