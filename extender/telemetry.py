"""Live GPU utilization and memory, from Prometheus (DCGM exporter series) or static values.

Readings are fetched in the background and never inside a request; each carries the time it was
sampled, and a reading older than ``max_age_s`` counts as unknown ("telemetry stale (93 s)").

Series read (current names first, then the 1.x and old-namespace spellings exporters still emit):

=====================  =================================================================
SM utilization (%)     ``DCGM_FI_DEV_GPU_UTIL``, ``dcgm_gpu_utilization``; for MIG devices
                       ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (ratio), ``dcgm_fi_prof_gr_engine_active``
VRAM used / free (MiB) ``DCGM_FI_DEV_FB_USED`` / ``DCGM_FI_DEV_FB_FREE`` (``dcgm_fb_used`` / ``dcgm_fb_free``)
VRAM reserved (MiB)    ``DCGM_FI_DEV_FB_RESERVED`` (counted as used)
=====================  =================================================================

The node of a series is its ``node`` or ``kubernetes_node`` label when a scrape config adds one, else the
exporter's ``Hostname``/``hostname`` (the node name when the exporter runs with hostNetwork); the GPU is
its ``UUID``/``uuid``, else its ``gpu`` index.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from extender.topology import Gpu

__all__ = [
    "AgentScrapeTelemetry",
    "GpuReading",
    "PrometheusTelemetry",
    "Telemetry",
    "TelemetryBoard",
    "readings_from_exposition",
    "readings_from_vectors",
    "static_board",
]

log = logging.getLogger(__name__)

NODE_LABELS = ("node", "kubernetes_node", "Hostname", "hostname")
UUID_LABELS = ("UUID", "uuid")
SERIES: dict[str, tuple[str, ...]] = {
    "util": ("DCGM_FI_DEV_GPU_UTIL", "dcgm_gpu_utilization"),
    "engine": ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "dcgm_fi_prof_gr_engine_active"),
    "used": ("DCGM_FI_DEV_FB_USED", "dcgm_fb_used"),
    "free": ("DCGM_FI_DEV_FB_FREE", "dcgm_fb_free"),
    "reserved": ("DCGM_FI_DEV_FB_RESERVED",),
}


@dataclass(frozen=True)
class GpuReading:
    sm_util: float | None = None  # percent busy
    memory_used_mib: float | None = None
    memory_free_mib: float | None = None
    at: float | None = None  # sample time (epoch s); None for static values that never age
    pod: str | None = None  # "namespace/name" holding the GPU, as DCGM exporter's pod labels say
    sm_history: tuple[float, ...] = ()  # recent SM utilization samples, oldest first (diagnose)

    @property
    def memory_total_mib(self) -> float | None:
        if self.memory_used_mib is None or self.memory_free_mib is None:
            return None
        return self.memory_used_mib + self.memory_free_mib


class TelemetryBoard:
    """The latest reading per (node, GPU); swapped whole on each refresh."""

    def __init__(self, max_age_s: float = 60.0) -> None:
        self.max_age_s = max_age_s
        self._readings: dict[tuple[str, str], GpuReading] = {}
        self.refreshed_at: float | None = None
        self.last_error: str | None = None

    def replace(self, readings: Mapping[tuple[str, str], GpuReading], at: float) -> None:
        self._readings = dict(readings)
        self.refreshed_at = at
        self.last_error = None

    def put(self, key: tuple[str, str], reading: GpuReading) -> None:
        self._readings = {**self._readings, key: reading}

    def reading(self, node: str, gpu: Gpu) -> GpuReading | None:
        readings = self._readings
        if gpu.uuid:
            found = readings.get((node, gpu.uuid))
            if found is not None:
                return found
        return readings.get((node, f"#{gpu.index}"))

    def age(self, reading: GpuReading, now: float) -> float | None:
        return None if reading.at is None else max(0.0, now - reading.at)

    def is_stale(self, reading: GpuReading, now: float) -> bool:
        age = self.age(reading, now)
        return age is not None and age > self.max_age_s

    def of_pod(self, key: str) -> list[tuple[str, GpuReading]]:
        """Readings attributed to a pod ("namespace/name"), as ("node GPU i", reading), one per GPU."""
        return sorted(
            (f"{node} GPU {gpu[1:]}", r)
            for (node, gpu), r in self._readings.items()
            if gpu.startswith("#") and r.pod == key
        )

    def node_age(self, node: str, now: float) -> float | None:
        ages = [now - r.at for (n, _), r in self._readings.items() if n == node and r.at is not None]
        return min(ages) if ages else None

    def __len__(self) -> int:
        return len(self._readings)


class Telemetry:
    """A board plus whatever keeps it fresh. The static source is only the board; polled sources
    override :meth:`refresh`, which runs every ``interval_s`` on a background thread (backing off to
    5 minutes while it fails, the board meanwhile aging)."""

    interval_s: float = 15.0

    def __init__(self, board: TelemetryBoard, describe: str = "static") -> None:
        self.board = board
        self.describe = describe
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def refresh(self) -> int:
        """One poll; returns the number of GPU readings. Static values need none."""
        return len(self.board)

    def _loop(self) -> None:
        backoff = self.interval_s
        while not self._stop.is_set():
            try:
                count = self.refresh()
                log.debug("telemetry from %s: %d GPU readings", self.describe, count)
                backoff = self.interval_s
            except Exception as exc:  # any failure: keep serving the aging board, say why, retry later
                self.board.last_error = str(exc)
                log.warning("telemetry from %s failed: %s (readings age until it recovers)", self.describe, exc)
                backoff = min(backoff * 2, 300.0)
            self._stop.wait(backoff)

    def start(self) -> None:
        if self._thread is None and type(self).refresh is not Telemetry.refresh:
            self._thread = threading.Thread(target=self._loop, name="telemetry", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


def _label(labels: Mapping[str, str], names: Iterable[str]) -> str | None:
    for name in names:
        value = labels.get(name)
        if value:
            return value
    return None


def readings_from_vectors(
    vectors: Mapping[str, list[dict[str, Any]]], fallback_at: float
) -> dict[tuple[str, str], GpuReading]:
    """Prometheus instant-query results per series kind → readings by (node, GPU key)."""
    fields: dict[tuple[str, str], dict[str, float]] = {}
    times: dict[tuple[str, str], float] = {}
    pods: dict[tuple[str, str], str] = {}
    for kind, results in vectors.items():
        for series in results:
            labels = series.get("metric") or {}
            node = _label(labels, NODE_LABELS)
            gpu = _label(labels, UUID_LABELS)
            key_gpu = gpu if gpu else (f"#{labels['gpu']}" if labels.get("gpu") not in (None, "") else None)
            if node is None or key_gpu is None or labels.get("GPU_I_ID") not in (None, ""):
                continue  # MIG instances are not whole-GPU readings
            try:
                ts, raw = series["value"]
                value = float(raw)
            except (KeyError, TypeError, ValueError):
                continue
            keys = [(node, key_gpu)] + ([(node, f"#{labels['gpu']}")] if gpu and labels.get("gpu") else [])
            pod = _label(labels, ("pod", "pod_name"))
            namespace = _label(labels, ("namespace", "pod_namespace"))
            for key in keys:
                if pod and namespace:
                    pods[key] = f"{namespace}/{pod}"
                if kind == "at":
                    times[key] = value
                else:
                    fields.setdefault(key, {})[kind] = value
                    times.setdefault(key, float(ts))
    out: dict[tuple[str, str], GpuReading] = {}
    for key, f in fields.items():
        util = f.get("util", f["engine"] * 100 if "engine" in f else None)
        used = f.get("used")
        if used is not None and "reserved" in f:
            used += f["reserved"]
        out[key] = GpuReading(util, used, f.get("free"), times.get(key, fallback_at), pods.get(key))
    return out


class PrometheusTelemetry(Telemetry):
    """Polls a Prometheus server's instant-query API for DCGM exporter series."""

    def __init__(
        self,
        url: str,
        board: TelemetryBoard,
        interval_s: float = 15.0,
        timeout_s: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(board, f"prometheus {url}")
        self.url = url.rstrip("/")
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.clock = clock

    def _query(self, promql: str) -> list[dict[str, Any]]:
        query = urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{query}", timeout=self.timeout_s) as resp:
            doc = json.load(resp)
        if doc.get("status") != "success":
            raise RuntimeError(f"prometheus answered {doc.get('errorType')}: {doc.get('error')}")
        data = doc.get("data") or {}
        return list(data.get("result") or []) if data.get("resultType") == "vector" else []

    def refresh(self) -> int:
        """One poll; returns the number of GPU readings. Errors keep the old board (which then ages)."""
        vectors: dict[str, list[dict[str, Any]]] = {}
        for kind, names in SERIES.items():
            for name in names:
                result = self._query(name)
                if result:
                    vectors[kind] = result
                    if kind == "used":
                        # The sample's own time, not the query's: a dead exporter's last value must age.
                        vectors["at"] = self._query(f"timestamp({name})")
                    break
        now = self.clock()
        readings = readings_from_vectors(vectors, now)
        self.board.replace(readings, now)
        return len(readings)

    def refresh_with_history(self, pod_key: str, window_s: float = 600, step_s: float = 15) -> int:
        """A refresh, plus the last ``window_s`` of SM utilization of the GPUs DCGM attributes to a pod."""
        self.refresh()
        namespace, _, name = pod_key.partition("/")
        now = self.clock()
        found = 0
        for metric in SERIES["util"]:
            params = urllib.parse.urlencode(
                {
                    "query": f'{metric}{{namespace="{namespace}",pod="{name}"}}',
                    "start": now - window_s,
                    "end": now,
                    "step": step_s,
                }
            )
            with urllib.request.urlopen(f"{self.url}/api/v1/query_range?{params}", timeout=self.timeout_s) as resp:
                doc = json.load(resp)
            for series in (doc.get("data") or {}).get("result") or []:
                labels = series.get("metric") or {}
                node, gpu = _label(labels, NODE_LABELS), labels.get("gpu")
                if node is None or gpu in (None, ""):
                    continue
                history = tuple(float(v) for _, v in series.get("values") or [])
                old = self.board.reading(node, Gpu(int(gpu))) or GpuReading(at=now)
                self.board.put(
                    (node, f"#{gpu}"),
                    GpuReading(old.sm_util, old.memory_used_mib, old.memory_free_mib, old.at, pod_key, history),
                )
                found += 1
            if found:
                break
        return found


def readings_from_exposition(text: str, at: float) -> dict[tuple[str, str], GpuReading]:
    """DCGM-named series in Prometheus text format (an agent's or an exporter's /metrics) → readings."""
    from prometheus_client.parser import text_string_to_metric_families

    vectors: dict[str, list[dict[str, Any]]] = {}
    wanted = {name: kind for kind, names in SERIES.items() for name in names}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            kind = wanted.get(sample.name)
            if kind is not None:
                vectors.setdefault(kind, []).append({"metric": dict(sample.labels), "value": [at, str(sample.value)]})
    return readings_from_vectors(vectors, at)


class AgentScrapeTelemetry(Telemetry):
    """Scrapes the node agents' /metrics directly, for clusters with neither DCGM exporter nor Prometheus.

    ``targets()`` names the agents to ask, e.g. every gpu-advisor agent pod's IP and port.
    """

    def __init__(
        self,
        targets: Callable[[], list[str]],
        board: TelemetryBoard,
        interval_s: float = 15.0,
        timeout_s: float = 3.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(board, "node agents")
        self.targets, self.interval_s, self.timeout_s, self.clock = targets, interval_s, timeout_s, clock

    def refresh(self) -> int:
        readings: dict[tuple[str, str], GpuReading] = {}
        failed = []
        for url in self.targets():
            try:
                with urllib.request.urlopen(url, timeout=self.timeout_s) as resp:
                    text = resp.read().decode()
            except OSError as exc:
                failed.append(f"{url}: {exc}")
                continue
            readings.update(readings_from_exposition(text, self.clock()))
        self.board.replace(readings, self.clock())
        if failed:
            self.board.last_error = "; ".join(failed[:3])
            log.warning("%d agents did not answer: %s", len(failed), self.board.last_error)
        return len(readings)


def static_board(readings: Mapping[tuple[str, str], GpuReading], max_age_s: float = 60.0) -> TelemetryBoard:
    board = TelemetryBoard(max_age_s)
    board.replace(readings, time.time())
    return board
