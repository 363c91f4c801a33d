"""What the agent serves over HTTP: live NVML samples per GPU under DCGM exporter's names and labels on
``/metrics``, and ``/healthz``, ``/readyz`` beside it.

``DCGM_FI_DEV_GPU_UTIL``, ``DCGM_FI_DEV_FB_USED``/``FREE`` in MiB, labelled ``gpu``, ``UUID``,
``modelName``, ``Hostname`` and ``namespace``/``pod``/``container`` of the holder: so the extender can
scrape agents where no DCGM exporter runs, with the same queries it sends Prometheus.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import ModuleType
from typing import Any, Protocol

from extender.agent.exposition import CONTENT_TYPE, Gauge, render
from extender.agent.gpu_reader import NVML, GpuReader
from extender.agent.podresources_client import Allocation, device_uuid
from extender.model.topology import GpuTopology

__all__ = ["GpuView", "dcgm_families", "dcgm_metrics", "serve_endpoints"]

log = logging.getLogger(__name__)

_LABELS = ("gpu", "UUID", "device", "modelName", "Hostname", "namespace", "pod", "container")


class GpuView(Protocol):
    """What the metrics read of the agent, as it is at scrape time."""

    node: str
    nvml: ModuleType | None
    topology: GpuTopology | None
    allocation: Allocation | None


def dcgm_families(view: GpuView) -> list[Gauge]:
    """Live NVML samples per GPU, named and labelled as DCGM exporter does."""
    # An AMD node's agent names its series as AMD's device metrics exporter does; views without a reader are NVML.
    reader: GpuReader = getattr(view, "reader", NVML)
    util = Gauge(reader.series[0], "GPU utilization (in %).")
    used = Gauge(reader.series[1], "Framebuffer memory used (in MiB).")
    free = Gauge(reader.series[2], "Framebuffer memory free (in MiB).")
    topo, nvml = view.topology, view.nvml
    if topo is None or nvml is None:
        return [util, used, free]
    by_uuid = {device_uuid(d): h for d, h in (view.allocation.holders.items() if view.allocation else [])}
    try:
        samples = reader.sample(nvml)
    except Exception as exc:  # a failed scrape is an empty scrape, not a dead endpoint
        log.warning("%s sample failed: %s", reader.library, exc)
        return [util, used, free]
    for s in samples:
        gpu = topo.gpu(s.index) if s.index in topo.indices else None
        bus = (gpu.pci_bus_id if gpu else None) or ""  # AMD's device plugin names GPUs by bus id
        holder = by_uuid.get(s.uuid or "") or by_uuid.get(bus, ("", "", ""))
        product = (gpu.product if gpu else None) or ""
        values = (str(s.index), s.uuid or "", f"{reader.device_prefix}{s.index}", product, view.node, *holder)
        labels = dict(zip(_LABELS, values, strict=True))
        if s.sm_util_percent is not None:
            util.add(labels, s.sm_util_percent)
        if s.memory_used_mib is not None and s.memory_total_mib is not None:
            used.add(labels, s.memory_used_mib)
            free.add(labels, s.memory_total_mib - s.memory_used_mib)
    return [util, used, free]


def dcgm_metrics(view: GpuView) -> bytes:
    """The ``/metrics`` body: the DCGM-named gauges in the Prometheus text format."""
    return render(dcgm_families(view))


def serve_endpoints(
    host: str, port: int, metrics: Callable[[], bytes], readiness: Callable[[], dict[str, Any]]
) -> ThreadingHTTPServer:
    """/metrics, /healthz, /readyz on a background thread; ``readiness()`` has ``ready`` and the rest."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/metrics":
                status, body, kind = 200, metrics(), CONTENT_TYPE
            elif self.path == "/healthz":
                status, body, kind = 200, b'{"status":"ok"}', "application/json"
            elif self.path == "/readyz":
                doc = readiness()
                status, body, kind = (200 if doc["ready"] else 503), json.dumps(doc).encode(), "application/json"
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
