"""/readyz and the watch metrics say what is wrong; the API server is retried with capped
exponential backoff and full jitter."""

from __future__ import annotations

import random
import socket
from typing import Any

from fastapi.testclient import TestClient
from kubernetes import client

from extender.cluster.state import ClusterState
from extender.http.advisor import Advisor
from extender.model.readings import TelemetryBoard
from extender.scoring import ScoringPolicy
from extender.sources.backoff import Backoff
from extender.sources.kube_watch import KubeSource
from extender.sources.watch_health import WatchHealth
from gpu_advisor.app import create_app
from tests.containment.live import eventually, live_source, metric
from tests.fakes.apiserver import FakeApiServer, node


class Clock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_backoff_doubles_its_ceiling_up_to_the_cap_and_draws_uniformly_below_it() -> None:
    backoff = Backoff(base_s=1.0, cap_s=10.0, rng=random.Random(7))
    waits = [backoff.next_wait() for _ in range(6)]
    # Ceilings 1, 2, 4, 8, then capped at 10, 10; each wait is the seeded draw uniform(0, ceiling).
    expected_rng = random.Random(7)
    assert waits == [expected_rng.uniform(0, c) for c in (1, 2, 4, 8, 10, 10)]
    assert all(0 <= w <= c for w, c in zip(waits, (1, 2, 4, 8, 10, 10), strict=True))
    backoff.reset()
    assert backoff.ceiling() == 1.0, "an answer starts the next run of failures from the base again"


def test_a_long_outage_never_overflows_the_backoff() -> None:
    backoff = Backoff(base_s=1.0, cap_s=60.0, rng=random.Random(1))
    backoff.failures = 10_000
    assert 0 <= backoff.next_wait() <= 60.0


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_api_server_is_retried_with_jittered_exponential_waits() -> None:
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{closed_port()}"
    cfg.retries = False
    source = KubeSource(
        client.CoreV1Api(client.ApiClient(cfg)),
        ClusterState("kube"),
        backoff_s=0.5,
        backoff_cap_s=4.0,
        rng=random.Random(3),
    )
    waits: list[float] = []

    def wait(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 6:
            source.stop()

    source.wait = wait
    source._run("pods")  # in this thread, until six retries were asked for
    expected = random.Random(3)
    assert waits == [expected.uniform(0, c) for c in (0.5, 1, 2, 4, 4, 4)]
    assert source.health.degradations(0)[0].reason.startswith("retrying: watch interrupted")


def served(source: KubeSource, clock: Clock, telemetry: TelemetryBoard | None = None) -> TestClient:
    advisor = Advisor(state=source.state, telemetry=telemetry, policy=ScoringPolicy(), clock=clock)
    return TestClient(create_app(advisor))


def test_a_silent_api_watch_makes_the_replica_unready_with_the_reason() -> None:
    clock = Clock()
    with FakeApiServer() as fake:
        fake.put("nodes", node("gpu-a", gpus=8))
        source, registry = live_source(fake, clock=clock)
        source.start()
        assert source.state.wait_ready(8)
        api = served(source, clock)
        assert api.get("/readyz").status_code == 200
        eventually(lambda: metric(registry, "gpu_advisor_source_state", resource="pods", state="watching") == 1)
        # The watches stop hearing anything (as a hung connection or a partitioned API server would).
        source.stop()
        for thread in source._threads:
            thread.join(timeout=8)
    # Within the limit (2 × (2 s watch + 30 s) = 64 s) the replica is ready...
    clock.now += 60
    reply = api.get("/readyz")
    assert reply.status_code == 200 and reply.json()["ready"] is True
    # ...past it, it is not, and says why.
    clock.now += 10
    reply = api.get("/readyz")
    body: dict[str, Any] = reply.json()
    assert reply.status_code == 503 and body["ready"] is False
    assert "no word from the API server about nodes for 70 s (limit 64 s)" in body["reason"]
    assert "gpu_advisor_ready 0.0" in api.get("/metrics").text
    assert metric(registry, "gpu_advisor_watch_silence_seconds", resource="nodes") == 70


def test_telemetry_down_is_degraded_but_ready() -> None:
    clock = Clock()
    with FakeApiServer() as fake:
        fake.put("nodes", node("gpu-a", gpus=8))
        source, _ = live_source(fake, clock=clock)
        source.start()
        try:
            assert source.state.wait_ready(8)
            board = TelemetryBoard(source="prometheus http://127.0.0.1:9")
            board.failed("connection refused")
            reply = served(source, clock, board).get("/readyz")
        finally:
            source.stop()
    assert reply.status_code == 200
    degraded = reply.json()["degraded"]
    assert degraded == [
        {
            "part": "telemetry",
            "reason": "prometheus http://127.0.0.1:9: last poll failed (connection refused); "
            "GPU headroom is scored neutral until it recovers",
            "unready": False,
        }
    ]


def test_watch_metrics_age_relists_errors_and_state() -> None:
    clock = Clock()
    health = WatchHealth(["pods"], clock, stale_after_s=100)
    health.listed("pods")
    health.watching("pods")
    clock.now += 12
    health.failed("pods", "API server answered 500 Internal")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in health.collect() for s in f.samples}
    assert samples["gpu_advisor_watch_age_seconds", (("resource", "pods"),)] == 12
    assert samples["gpu_advisor_watch_relists_total", (("resource", "pods"),)] == 1
    assert samples["gpu_advisor_watch_errors_total", (("resource", "pods"),)] == 1
    assert samples["gpu_advisor_source_state", (("resource", "pods"), ("state", "retrying"))] == 1
    assert samples["gpu_advisor_source_state", (("resource", "pods"), ("state", "watching"))] == 0
