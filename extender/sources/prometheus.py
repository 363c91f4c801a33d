"""Live GPU utilization and memory from Prometheus (DCGM exporter series).

Each poll asks, per DCGM field the advisor reads (``extender.model.dcgm``):

- ``last_over_time(F[10m])``: the last value of every series seen in the lookback, so a GPU whose
  exporter died keeps its last value (and reads "stale") instead of vanishing;
- ``timestamp(F)``: the sample time of the series still being scraped (a series absent here has
  ended: Prometheus marks it stale on the first failed scrape);
- ``max_over_time(timestamp(F)[10m:5s])``: the last sample time of the series that ended;
- for SM activity, ``avg_over_time(F[1m])``: a short window average, not one instant sample.

Series are placed on nodes, GPUs and pods by ``extender.model.series_map``; every series that
places nowhere is counted, and the first of each label shape is logged with the relabeling to add.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from extender.errors import InputError
from extender.model.dcgm import FIELDS, SM_FIELDS
from extender.model.readings import GpuReading, TelemetryBoard
from extender.model.series_map import Directory, SeriesPlace, place_series
from extender.model.series_readings import Sample, readings_from_samples
from extender.model.topology import Gpu
from extender.sources.polling import Telemetry

__all__ = ["PrometheusTelemetry", "PrometheusUrlError", "prometheus_url"]

log = logging.getLogger(__name__)

_SM_KINDS = {kind for kind, _, _ in SM_FIELDS}


class PrometheusUrlError(InputError):
    """A --prometheus value that cannot be a Prometheus server's address; the message says why."""


def api_get(url: str, path: str, params: Mapping[str, Any], timeout_s: float) -> Any:
    """The ``data`` of one call of Prometheus's HTTP API (any server speaking it); RuntimeError saying
    what the server said when it refuses."""
    what = params.get("query", path)
    address = f"{url}{path}?{urllib.parse.urlencode(params, doseq=True)}"
    try:
        with urllib.request.urlopen(address, timeout=timeout_s) as resp:
            doc = json.load(resp)
    except urllib.error.HTTPError as exc:
        # Prometheus answers a bad query with 4xx and a JSON error: say what it said.
        try:
            doc = json.load(exc)
        except ValueError:
            raise RuntimeError(f"prometheus answered HTTP {exc.code} to {what!r}") from None
    if not isinstance(doc, dict) or doc.get("status") != "success":
        error = doc.get("error") if isinstance(doc, dict) else doc
        raise RuntimeError(f"prometheus answered {what!r} with an error: {error}")
    return doc.get("data")


def prometheus_url(text: str) -> str:
    """``http(s)://host[:port][/path]`` → the same without a trailing slash; anything else is an error."""
    parsed = urllib.parse.urlsplit(text.strip())
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise PrometheusUrlError(
            f"--prometheus {text!r} is not a URL such as http://prometheus.monitoring:9090 (scheme and host needed)"
        )
    try:
        parsed.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise PrometheusUrlError(f"--prometheus {text!r}: the port is not a number") from None
    if parsed.query or parsed.fragment:
        raise PrometheusUrlError(f"--prometheus {text!r}: give the server's base URL, without a query")
    return text.strip().rstrip("/")


def _seconds(value: float) -> str:
    return f"{max(1, round(value))}s"


def _key(labels: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))


class PrometheusTelemetry(Telemetry):
    """Polls a Prometheus server's query API for DCGM exporter series."""

    def __init__(
        self,
        url: str,
        board: TelemetryBoard,
        interval_s: float = 15.0,
        timeout_s: float = 5.0,
        clock: Callable[[], float] = time.time,
        where: Callable[[], Directory] = Directory,
        lookback_s: float = 600.0,
        window_s: float = 60.0,
        resolution_s: float = 5.0,
    ) -> None:
        super().__init__(board, f"prometheus {url}")
        self.url = prometheus_url(url)
        board.source = self.describe
        self.interval_s, self.timeout_s, self.clock, self.where = interval_s, timeout_s, clock, where
        self.lookback_s, self.window_s, self.resolution_s = lookback_s, window_s, resolution_s
        self._warned: set[tuple[str, ...]] = set()

    def _get(self, path: str, params: Mapping[str, Any]) -> dict[str, Any]:
        return api_get(self.url, path, params, self.timeout_s) or {}

    def _query(self, promql: str) -> list[dict[str, Any]]:
        data = self._get("/api/v1/query", {"query": promql})
        return list(data.get("result") or []) if data.get("resultType") == "vector" else []

    def check(self) -> None:
        """Raise (with the reason) unless the server answers a query now: for --require-telemetry."""
        try:
            self._query("vector(1)")
        except (OSError, RuntimeError, ValueError) as exc:
            raise RuntimeError(f"prometheus at {self.url} does not answer: {exc}") from None

    def _values(self, promql: str) -> dict[tuple[tuple[str, str], ...], float]:
        out = {}
        for series in self._query(promql):
            try:
                out[_key(series.get("metric") or {})] = float(series["value"][1])
            except (KeyError, IndexError, TypeError, ValueError):
                continue
        return out

    def _samples_of(self, kind: str, name: str) -> list[Sample]:
        lookback = _seconds(self.lookback_s)
        last = self._query(f"last_over_time({name}[{lookback}])")
        if not last:
            return []
        live = self._values(f"timestamp({name})")
        seen = self._values(f"max_over_time(timestamp({name})[{lookback}:{_seconds(self.resolution_s)}])")
        average = self._values(f"avg_over_time({name}[{_seconds(self.window_s)}])") if kind in _SM_KINDS else {}
        samples = []
        for series in last:
            labels = {k: v for k, v in (series.get("metric") or {}).items() if k != "__name__"}
            key = _key(labels)
            try:
                value = average.get(key, float(series["value"][1]))
            except (KeyError, IndexError, TypeError, ValueError):
                continue
            samples.append(Sample(name, labels, value, live.get(key, seen.get(key)), key in live))
        return samples

    def refresh(self) -> int:
        """One poll; returns the number of GPU readings. Errors keep the old board (which then ages)."""
        samples: list[Sample] = []
        for kind, names in FIELDS.items():
            for name in names:
                samples.extend(self._samples_of(kind, name))
        now = self.clock()
        tally = readings_from_samples(samples, self.where(), now)
        for sample, miss in tally.first_misses:
            if miss.shape not in self._warned:
                self._warned.add(miss.shape)
                log.warning(
                    "telemetry: series %s%s %s; it is counted as unmatched. Fix: %s",
                    sample.metric,
                    json.dumps(dict(sample.labels), sort_keys=True),
                    miss.reason,
                    miss.fix,
                )
        self.board.replace(tally.readings, now, tally.census, tally.rejected)
        return len(tally.readings)

    def _history(self, metric: str, selector: str, now: float, window_s: float, step_s: float) -> list[dict[str, Any]]:
        params = {"query": f"{metric}{{{selector}}}", "start": now - window_s, "end": now, "step": step_s}
        data = self._get("/api/v1/query_range", params)
        return list(data.get("result") or []) if data.get("resultType") == "matrix" else []

    def refresh_with_history(self, pod_key: str, window_s: float = 600, step_s: float = 15) -> int:
        """A refresh, plus the last ``window_s`` of SM activity of the GPUs DCGM attributes to a pod."""
        self.refresh()
        namespace, _, name = pod_key.partition("/")
        now = self.clock()
        selectors = (f'namespace="{namespace}",pod="{name}"', f'exported_namespace="{namespace}",exported_pod="{name}"')
        for _, factor, metric in SM_FIELDS:
            found = 0
            for selector in selectors:
                for series in self._history(metric, selector, now, window_s, step_s):
                    place = place_series(series.get("metric") or {}, self.where())
                    if isinstance(place, SeriesPlace) and self._record_history(place, pod_key, series, factor, now):
                        found += 1
                if found:
                    return found
        return 0

    def _record_history(
        self, place: SeriesPlace, pod_key: str, series: Mapping[str, Any], factor: float, now: float
    ) -> bool:
        if place.index is None or place.mig is not None:
            return False
        history = tuple(float(v) * factor for _, v in series.get("values") or [])
        old = self.board.reading(place.node, Gpu(place.index, uuid=place.uuid)) or GpuReading(at=now)
        self.board.put((place.node, f"#{place.index}"), replace(old, pod=pod_key, sm_history=history))
        return True
