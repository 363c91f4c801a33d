"""The per-tenant usage gauges on /metrics, and the background refresh that keeps them fresh.

``gpu_advisor_usage_gpu_hours{by, tenant, kind}``: GPU-hours (GPU-equivalents) allocated, used and idle
per tenant of one usage report, the MAX_TENANTS most allocated and the rest summed into "(other)", so the
label set stays bounded however many namespaces a cluster has.

Without a refresh the gauges show the last report someone asked ``GET /v1/usage`` for. A dashboard needs
them current: ``serve`` with a Prometheus runs :class:`UsageRefresh`, which reads a report (one ``by``,
one window) every interval on its own thread, off the request path; then it alone sets them (a request
``by=workload`` would otherwise swap a namespace dashboard's series). A failed read is logged, counted
(``gpu_advisor_usage_refresh_failures_total``) and leaves the last good figures, which
``gpu_advisor_usage_refreshed_timestamp_seconds`` dates.
"""

from __future__ import annotations

import logging
import threading
import weakref

from prometheus_client import CollectorRegistry, Counter, Gauge

from extender.advice.usage import UsageReport, tenant_key, usage_report
from extender.http.advisor import Advisor

__all__ = ["MAX_TENANTS", "TenantGauges", "UsageRefresh", "tenant_gauges"]

log = logging.getLogger(__name__)

MAX_TENANTS = 20  # gauge series per kind: the most allocated tenants; the rest sum into "(other)"
OTHER = "(other)"
# Retry soon while the cluster model has not synced (the DCGM series are placed on its pods).
_NOT_READY_WAIT_S = 5.0


class TenantGauges:
    """One report's tenants: GPU-hours allocated, used and idle, at most MAX_TENANTS + 1 each."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.hours = Gauge(
            "gpu_advisor_usage_gpu_hours",
            "GPU-hours (GPU-equivalents) of the last usage report's tenants, by kind: allocated, used, idle",
            ["by", "tenant", "kind"],
            registry=registry,
        )
        self.kept_fresh = False  # True while a UsageRefresh runs: then requests leave the gauges alone
        self._lock = threading.Lock()

    def set(self, report: UsageReport) -> None:
        rows: dict[str, dict[str, float]] = {}
        for i, tenant in enumerate(report.tenants):  # most allocated first
            name = tenant.tenant if i < MAX_TENANTS else OTHER
            row = rows.setdefault(name, {"allocated": 0.0, "used": 0.0, "idle": 0.0})
            row["allocated"] += tenant.allocated_gpu_hours
            row["used"] += tenant.used_gpu_hours or 0.0
            row["idle"] += tenant.idle_gpu_hours or 0.0
        with self._lock:  # a scrape sees one report's series, never half of two
            self.hours.clear()  # a tenant gone from the report leaves no stale series behind
            for name, row in rows.items():
                for kind, value in row.items():
                    self.hours.labels(report.by, name, kind).set(value)


# One set per registry: a registry takes each metric name once, and the router and the refresh share it.
_GAUGES: weakref.WeakKeyDictionary[CollectorRegistry, TenantGauges] = weakref.WeakKeyDictionary()


def tenant_gauges(registry: CollectorRegistry) -> TenantGauges:
    if registry not in _GAUGES:
        _GAUGES[registry] = TenantGauges(registry)
    return _GAUGES[registry]


class UsageRefresh:
    """Every ``interval_s``, the usage report ``by`` over ``window_s`` into the tenant gauges."""

    def __init__(self, advisor: Advisor, interval_s: float, by: str = "namespace", window_s: float = 30 * 86400):
        tenant_key(by)  # a bad ``by`` is refused at start (ValueError), not logged every interval
        self.advisor, self.interval_s, self.by, self.window_s = advisor, interval_s, by, window_s
        self.gauges = tenant_gauges(advisor.registry)
        self.failures = Counter(
            "gpu_advisor_usage_refresh_failures", "Background usage reports that failed", registry=advisor.registry
        )
        self.refreshed = Gauge(
            "gpu_advisor_usage_refreshed_timestamp_seconds",
            "When the usage gauges were last refreshed (unix seconds)",
            registry=advisor.registry,
        )
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def refresh(self) -> bool:
        """One report into the gauges; False (logged and counted) when the history could not be read."""
        source = self.advisor.usage
        if source is None:
            return False
        try:
            pods = source.read(self.advisor.clock(), self.window_s)
            report = usage_report(pods, self.by, self.window_s / 3600, source.name)
        except Exception as exc:  # any failure of the read or the report: the server keeps serving
            self.failures.inc()
            log.warning("usage gauges not refreshed from %s: %s: %s", source.name, type(exc).__name__, exc)
            return False
        self.gauges.set(report)
        self.refreshed.set(self.advisor.clock())
        return True

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self.advisor.state.ready:
                self._stop.wait(min(self.interval_s, _NOT_READY_WAIT_S))
                continue
            self.refresh()
            self._stop.wait(self.interval_s)

    def start(self) -> None:
        self.gauges.kept_fresh = True
        self._thread = threading.Thread(target=self._run, name="usage-refresh", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.gauges.kept_fresh = False
