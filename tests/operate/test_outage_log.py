"""An unreachable API server is logged when its state changes, not on every retry."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable

import pytest
from kubernetes import client

from extender.cluster.state import ClusterState
from extender.sources.kube_watch import RESOURCES, KubeSource
from extender.sources.outage_log import OutageLog
from tests.fakes.apiserver import FakeApiServer, node

log = logging.getLogger("test.outage")


def eventually(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


def warnings(caplog: pytest.LogCaptureFixture, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger and r.levelno >= logging.WARNING]


def test_tries_of_one_cause_are_one_line_a_new_cause_another_and_recovery_a_third(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    outages = OutageLog(log, lambda: now[0])
    with caplog.at_level(logging.DEBUG, logger="test.outage"):
        for _ in range(50):  # 50 refused connections: one line
            outages.failed("nodes", "MaxRetryError", "connection refused", 1.0)
            now[0] += 1
        outages.failed("nodes", "403", "API server answered 403 Forbidden", 1.0)  # a new cause: a line
        now[0] += 10
        outages.answered("nodes")  # back after 51 tries in 60 s: a line
        outages.answered("nodes")  # already fine: nothing
    assert warnings(caplog, "test.outage") == [
        "nodes: connection refused; retrying with backoff, logged again when this changes",
        "nodes: API server answered 403 Forbidden; retrying with backoff, logged again when this changes",
        "nodes: the API server answers again after 1 failed tries in 60 s",
    ]
    assert sum(r.levelno == logging.DEBUG for r in caplog.records) == 49, "every further try is still at debug"


def closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


def test_a_watch_on_an_unreachable_api_server_warns_once_per_resource_then_once_when_it_is_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = closed_port()
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{port}"
    cfg.retries = 0
    source = KubeSource(
        client.CoreV1Api(client.ApiClient(cfg)), ClusterState("kube"), backoff_s=0.01, backoff_cap_s=0.02
    )
    with caplog.at_level(logging.DEBUG, logger="extender.sources.kube_watch"):
        source.start()
        try:
            eventually(lambda: min(b.failures for b in source.backoffs.values()) >= 20)
            down = warnings(caplog, "extender.sources.kube_watch")
            with FakeApiServer(port) as fake:
                fake.put("nodes", node("gpu-1"))
                assert source.state.wait_ready(20)
                # nodes, pods, the claims Leases and the three DRA resources: each down once, each back once
                eventually(lambda: len(warnings(caplog, "extender.sources.kube_watch")) == 2 * len(RESOURCES))
        finally:
            source.stop()
    assert sorted(line.split(":")[0] for line in down) == sorted(RESOURCES), down
    assert all("retrying with backoff" in line for line in down)
    back = warnings(caplog, "extender.sources.kube_watch")[len(RESOURCES) :]
    assert sorted(line.split(" failed tries")[0].split(" after ")[0] for line in back) == [
        f"{what}: the API server answers again" for what in sorted(RESOURCES)
    ]
