"""Live GPU utilization and memory from Prometheus (DCGM exporter series).

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
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from extender.model.readings import GpuReading, TelemetryBoard
from extender.model.topology import Gpu
from extender.sources.polling import Telemetry

__all__ = ["SERIES", "PrometheusTelemetry", "readings_from_vectors"]

NODE_LABELS = ("node", "kubernetes_node", "Hostname", "hostname")
UUID_LABELS = ("UUID", "uuid")
SERIES: dict[str, tuple[str, ...]] = {
    "util": ("DCGM_FI_DEV_GPU_UTIL", "dcgm_gpu_utilization"),
    "engine": ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "dcgm_fi_prof_gr_engine_active"),
    "used": ("DCGM_FI_DEV_FB_USED", "dcgm_fb_used"),
    "free": ("DCGM_FI_DEV_FB_FREE", "dcgm_fb_free"),
    "reserved": ("DCGM_FI_DEV_FB_RESERVED",),
}


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
