"""The node agent: each GPU node publishes how its GPUs are wired and which are free.

- Topology from NVML, read at start and again when the MIG layout changes.
- Allocations from the kubelet's PodResources API (``podresources_client``).
- Both go to its own Node as the annotations ``gpu-advisor.io/topology`` and ``gpu-advisor.io/free-gpus``
  (``publish``: on change only, rate-limited, with backoff).
- ``/metrics`` serves live NVML samples under DCGM exporter's names (``metrics``), ``/healthz`` and
  ``/readyz`` beside it.
- No GPU, no NVML or no kubelet socket: one log line per distinct problem and a non-ready status; the
  agent keeps retrying instead of crash-looping.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

from extender.agent.apiserver import NodeWriter
from extender.agent.gpu_reader import NVML, GpuReader
from extender.agent.metrics import dcgm_metrics, serve_endpoints
from extender.agent.podresources_client import Allocation, PodResourcesClient, free_gpu_indices
from extender.agent.publish import NodePublisher, short_error
from extender.errors import SourceError
from extender.model.topology import GpuTopology

__all__ = ["Agent", "AgentStatus"]

log = logging.getLogger(__name__)


@dataclass
class AgentStatus:
    ready: bool = False
    reason: str = "starting"
    writes: int = 0
    problems: set[str] = field(default_factory=set)


class Agent:
    def __init__(
        self,
        node: str,
        api: NodeWriter,
        pod_resources: Callable[[], PodResourcesClient],
        load_nvml: Callable[[], ModuleType],
        min_interval_s: float = 10.0,
        sysfs: Path = Path("/sys"),
        clock: Callable[[], float] = time.time,
        reader: GpuReader = NVML,  # AMDSMI on AMD Instinct nodes; load_nvml is then its loader
    ) -> None:
        self.node = node
        self.reader = reader
        self.publisher = NodePublisher(node, api, min_interval_s)
        self._pod_resources_factory = pod_resources
        self._pod_resources: PodResourcesClient | None = None
        self._load_nvml = load_nvml
        self.sysfs = sysfs
        self.clock = clock
        self.nvml: ModuleType | None = None
        self.topology: GpuTopology | None = None
        self._mig_signature: tuple[Any, ...] | None = None
        self.allocation: Allocation | None = None
        self.status = AgentStatus()
        self._stop = threading.Event()

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
            signature = self.reader.layout(self.nvml)
            if self.topology is None or signature != self._mig_signature:
                if self.topology is not None:
                    log.info("MIG layout changed: reading the topology again")
                self.topology = self.reader.discover(self.nvml, self.sysfs)
                self._mig_signature = signature
            return True
        except SourceError as exc:  # NvmlUnavailable, AmdSmiUnavailable
            self._problem("nvml", f"no GPU topology: {exc}")
        except Exception as exc:
            self._problem("nvml-call", f"{self.reader.library} failed: {exc}")
        return False

    def _read_allocation(self) -> bool:
        try:
            if self._pod_resources is None:
                self._pod_resources = self._pod_resources_factory()
            self.allocation = self._pod_resources.allocation(self.reader.resource)
            return True
        except Exception as exc:
            self._problem("kubelet", f"kubelet PodResources API unreachable: {short_error(exc)}")
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
        free = free_gpu_indices(self.topology, self.allocation)
        if not self.publisher.publish(self.topology.to_json(), free, now):
            return False
        self.status.writes += 1
        log.info("node %s annotated: %d GPUs, free %s", self.node, len(self.topology.indices), list(free))
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
        status = self.status

        def readiness() -> dict[str, Any]:
            return {"ready": status.ready, "reason": status.reason, "writes": status.writes}

        return serve_endpoints(host, port, lambda: dcgm_metrics(self), readiness)
