"""``serve`` with a Prometheus keeps the per-tenant usage gauges fresh in the background: the report is
read every interval off the request path, a failure is logged and counted and never stops the server,
and the dashboard's series do not swap when someone asks for another ``by``."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from prometheus_client import generate_latest

from extender.advice.rightsize import Owner
from extender.advice.usage import PodUsage, UsageSource, gpu_ask
from extender.cluster.state import ClusterState
from extender.http.advisor import Advisor
from extender.http.usage_gauges import UsageRefresh
from gpu_advisor.app import create_app
from gpu_advisor.cli import main
from gpu_advisor.serve import ServeError, build_advisor
from tests.kube.test_kube_source import eventually


class History:
    """A usage history the test rewrites between refreshes, or breaks."""

    def __init__(self) -> None:
        self.pods: list[PodUsage] = []
        self.down: Exception | None = None
        self.reads = 0

    def set(self, hours: dict[str, float]) -> None:
        ask = gpu_ask("nvidia.com/gpu", 1)
        assert ask is not None
        self.pods = [PodUsage(ns, "p", Owner(ns, "Pod", "p"), (ask,), h) for ns, h in hours.items()]

    def read(self, end: float, window_s: float) -> list[PodUsage]:
        self.reads += 1
        if self.down is not None:
            raise self.down
        return self.pods


@pytest.fixture
def history(advisor: Advisor) -> History:
    found = History()
    advisor.usage = UsageSource(found.read, "http://127.0.0.1:9")
    return found


@pytest.fixture
def refresh(advisor: Advisor, history: History) -> Iterator[UsageRefresh]:
    running = UsageRefresh(advisor, interval_s=0.02)
    running.start()
    yield running
    running.stop()


def allocated(advisor: Advisor) -> dict[str, float]:
    """The allocated GPU-hours gauge per (by, tenant), as /metrics shows it."""
    found = {}
    for metric in advisor.registry.collect():
        if metric.name == "gpu_advisor_usage_gpu_hours":
            for s in metric.samples:
                if s.labels["kind"] == "allocated":
                    found[f"{s.labels['by']}/{s.labels['tenant']}"] = s.value
    return found


def sample(advisor: Advisor, name: str) -> float:
    value = advisor.registry.get_sample_value(name)
    assert value is not None, generate_latest(advisor.registry).decode()
    return value


def test_the_gauges_follow_the_history_with_no_request(advisor: Advisor, history: History) -> None:
    history.set({"ml": 24.0, "web": 12.0})  # 1 GPU × 24 h, 1 GPU × 12 h
    refresh = UsageRefresh(advisor, interval_s=0.02)
    refresh.start()
    try:
        eventually(lambda: allocated(advisor) == {"namespace/ml": 24.0, "namespace/web": 12.0})
        history.set({"ml": 48.0})  # web's pod gone from the window: its series goes too
        eventually(lambda: allocated(advisor) == {"namespace/ml": 48.0})
        assert sample(advisor, "gpu_advisor_usage_refreshed_timestamp_seconds") == advisor.clock()
    finally:
        refresh.stop()


def test_a_failed_refresh_is_logged_counted_and_keeps_the_last_figures(
    advisor: Advisor, history: History, refresh: UsageRefresh, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="extender.http.usage_gauges")
    history.set({"ml": 24.0})
    eventually(lambda: allocated(advisor) == {"namespace/ml": 24.0})
    history.down = OSError("connection refused")
    eventually(lambda: sample(advisor, "gpu_advisor_usage_refresh_failures_total") >= 2)
    assert allocated(advisor) == {"namespace/ml": 24.0}
    assert "usage gauges not refreshed from http://127.0.0.1:9: OSError: connection refused" in caplog.text
    history.down = None
    history.set({"ml": 30.0})  # the thread lived on: the next good read is shown
    eventually(lambda: allocated(advisor) == {"namespace/ml": 30.0})


def test_a_request_by_another_key_leaves_the_refreshed_gauges_alone(
    advisor: Advisor, history: History, refresh: UsageRefresh
) -> None:
    history.set({"ml": 24.0})
    eventually(lambda: allocated(advisor) == {"namespace/ml": 24.0})
    with TestClient(create_app(advisor), raise_server_exceptions=False) as client:
        reply = client.get("/v1/usage", params={"by": "workload"})
        assert reply.status_code == 200 and reply.json()["tenants"][0]["tenant"] == "ml/Pod/p"
        assert 'by="workload"' not in client.get("/metrics").text
    assert allocated(advisor) == {"namespace/ml": 24.0}


def test_no_refresh_before_the_cluster_model_syncs(advisor: Advisor, history: History) -> None:
    advisor.state = ClusterState("kube")  # a live watch that has not listed yet
    history.set({"ml": 24.0})
    refresh = UsageRefresh(advisor, interval_s=0.02)
    refresh.start()
    try:
        threading.Event().wait(0.1)
        assert history.reads == 0 and allocated(advisor) == {}
        advisor.state.mark_ready(advisor.clock())
        eventually(lambda: allocated(advisor) == {"namespace/ml": 24.0})
    finally:
        refresh.stop()


def test_serve_refreshes_the_gauges_only_with_a_prometheus() -> None:
    def refreshes(prometheus: str | None, every_s: float) -> list[tuple[float, str]]:
        _, background = build_advisor("simulated", prometheus, None, usage_refresh_s=every_s, usage_by="label:team")
        return [(p.interval_s, p.by) for p in background.parts if isinstance(p, UsageRefresh)]

    assert refreshes("http://127.0.0.1:9", 900) == [(900, "label:team")]
    assert refreshes("http://127.0.0.1:9", 0) == []  # off: the gauges follow GET /v1/usage, as before
    assert refreshes(None, 900) == []  # the simulated history never changes: nothing to refresh
    with pytest.raises(ServeError, match=r"--usage-by: .*give namespace, workload or label:KEY"):
        build_advisor("simulated", "http://127.0.0.1:9", None, usage_refresh_s=900, usage_by="team")


@pytest.mark.parametrize("seconds", ["5", "-1", "often"])
def test_serve_refuses_a_refresh_interval_it_cannot_keep(seconds: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--usage-refresh", seconds])
    assert exc.value.code == 2 and "--usage-refresh" in capsys.readouterr().err
