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
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import ModuleType
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from extender.agent.podresources_client import Allocation, device_uuid
from extender.model.topology import GpuTopology
from extender.sources.nvml import sample_gpus

__all__ = ["DcgmNamedCollector", "GpuView", "serve_endpoints"]

log = logging.getLogger(__name__)

_LABELS = ["gpu", "UUID", "device", "modelName", "Hostname", "namespace", "pod", "container"]


class GpuView(Protocol):
    """What the collector reads of the agent, as it is at scrape time."""

    node: str
    nvml: ModuleType | None
    topology: GpuTopology | None
    allocation: Allocation | None


class DcgmNamedCollector(Collector):
    """Live NVML samples per GPU, named and labelled as DCGM exporter does."""

    def __init__(self, view: GpuView) -> None:
        self.view = view

    def collect(self) -> Iterable[GaugeMetricFamily]:
        view = self.view
        util = GaugeMetricFamily("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", labels=_LABELS)
        used = GaugeMetricFamily("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", labels=_LABELS)
        free = GaugeMetricFamily("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", labels=_LABELS)
        topo, nvml = view.topology, view.nvml
        if topo is None or nvml is None:
            return [util, used, free]
        by_uuid = {device_uuid(d): h for d, h in (view.allocation.holders.items() if view.allocation else [])}
        try:
            samples = sample_gpus(nvml)
        except Exception as exc:  # a failed scrape is an empty scrape, not a dead endpoint
            log.warning("NVML sample failed: %s", exc)
            return [util, used, free]
        for s in samples:
            gpu = topo.gpu(s.index) if s.index in topo.indices else None
            holder = by_uuid.get(s.uuid or "", ("", "", ""))
            product = (gpu.product if gpu else None) or ""
            values = [str(s.index), s.uuid or "", f"nvidia{s.index}", product, view.node, *holder]
            if s.sm_util_percent is not None:
                util.add_metric(values, s.sm_util_percent)
            if s.memory_used_mib is not None and s.memory_total_mib is not None:
                used.add_metric(values, s.memory_used_mib)
                free.add_metric(values, s.memory_total_mib - s.memory_used_mib)
        return [util, used, free]


def serve_endpoints(
    host: str, port: int, registry: CollectorRegistry, readiness: Callable[[], dict[str, Any]]
) -> ThreadingHTTPServer:
    """/metrics, /healthz, /readyz on a background thread; ``readiness()`` has ``ready`` and the rest."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/metrics":
                status, body, kind = 200, generate_latest(registry), "text/plain; version=0.0.4"
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
