"""Agent telemetry speaks only for the node its agent runs on, and values no GPU can have are
rejected per series, counted, never used."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from extender.cluster.state import ClusterState, node_state
from extender.model.readings import TelemetryBoard
from extender.model.series_map import Directory, directory_of_places
from extender.model.series_readings import Sample, readings_from_samples, rejection
from extender.sources.agent_scrape import AgentScrapeTelemetry, AgentTarget
from extender.sources.pod_index import directory_source
from extender.sources.telemetry_trust import TelemetryTrust
from tests.containment.live import metric
from tests.fakes.apiserver import node

GPU0 = {"gpu": "0", "UUID": "GPU-0000", "device": "nvidia0", "modelName": "NVIDIA H100 80GB HBM3"}


def page(hostname: str, used: str = "1024", free: str = "80000", util: str = "50") -> str:
    labels = ",".join(f'{k}="{v}"' for k, v in {**GPU0, "Hostname": hostname}.items())
    return (
        f"# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{{{labels}}} {util}\n"
        f"# TYPE DCGM_FI_DEV_FB_USED gauge\nDCGM_FI_DEV_FB_USED{{{labels}}} {used}\n"
        f"# TYPE DCGM_FI_DEV_FB_FREE gauge\nDCGM_FI_DEV_FB_FREE{{{labels}}} {free}\n"
    )


@pytest.fixture
def agent() -> Iterator[tuple[str, dict[str, str]]]:
    """An agent's /metrics on 127.0.0.1 whose page the test writes."""
    served = {"text": ""}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = served["text"].encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/metrics", served
    server.shutdown()
    server.server_close()


def cluster(*names: str) -> ClusterState:
    state = ClusterState("test")
    state.replace_all(node_state(node(n, labels={"nvidia.com/gpu.memory": "81559"})) for n in names)
    return state


def test_an_agent_claiming_another_node_speaks_only_for_its_own(
    agent: tuple[str, dict[str, str]], caplog: pytest.LogCaptureFixture
) -> None:
    url, served = agent
    served["text"] = page(hostname="victim")  # the agent on "rogue" says it is "victim"
    state = cluster("rogue", "victim")
    board = TelemetryBoard()
    scrape = AgentScrapeTelemetry(lambda: [AgentTarget(url, "rogue")], board, where=directory_source(state, []))
    with caplog.at_level(logging.WARNING, logger="extender.sources.agent_scrape"):
        scrape.refresh()
        scrape.refresh()
    assert board.nodes() == {"rogue"}, "the readings land on the node the agent's pod runs on"
    assert [key for key, _ in board.of_node("victim")] == []
    assert board.misattributed == 2 * 3  # three series, two polls
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "runs on node rogue but labels its series victim" in warnings[0]
    registry = CollectorRegistry()
    registry.register(TelemetryTrust(board))
    assert metric(registry, "gpu_advisor_telemetry_misattributed_series_total") == 6


def test_an_honest_agent_is_not_counted(agent: tuple[str, dict[str, str]]) -> None:
    url, served = agent
    served["text"] = page(hostname="gpu-a")
    board = TelemetryBoard()
    AgentScrapeTelemetry(
        lambda: [AgentTarget(url, "gpu-a")], board, where=directory_source(cluster("gpu-a"), [])
    ).refresh()
    (_, reading), *_ = board.of_node("gpu-a")
    assert board.misattributed == 0 and reading.sm_util == 50 and reading.memory_used_mib == 1024


@pytest.mark.parametrize(
    ("field", "value", "memory", "why"),
    [
        ("fb_used", math.nan, 81559, "not finite"),
        ("fb_free", math.inf, 81559, "not finite"),
        ("fb_used", -1.0, 81559, "negative"),
        ("gpu_util", 100.5, None, "over 100 %"),  # GPU_UTIL is a percent
        ("sm_active", 1.2, None, "over 100 %"),  # SM_ACTIVE is a ratio: 1.2 × 100 = 120 %
        ("fb_used", 81559 * 1.01 + 1, 81559, "over the GPU's memory"),  # past 1 % of slack
        ("fb_used", 81559, 81559, None),
        ("fb_used", 1e12, None, None),  # memory unknown: no bound but finiteness
        ("sm_active", 1.0, None, None),
        ("gpu_util", 0.0, None, None),
    ],
)
def test_values_no_gpu_can_have_are_rejected(field: str, value: float, memory: int | None, why: str | None) -> None:
    assert rejection(field, value, memory) == why


def test_a_rejected_series_is_counted_and_never_used() -> None:
    where = directory_of_places(["gpu-a"], [], {"gpu-a": 81559})
    samples = [
        Sample("DCGM_FI_DEV_FB_USED", {**GPU0, "node": "gpu-a"}, math.nan, 1.0),
        Sample("DCGM_FI_DEV_FB_FREE", {**GPU0, "node": "gpu-a"}, 80000.0, 1.0),
        Sample("DCGM_FI_DEV_GPU_UTIL", {**GPU0, "node": "gpu-a"}, -3.0, 1.0),
    ]
    tally = readings_from_samples(samples, where, 1.0)
    reading = tally.readings["gpu-a", "#0"]
    # Used is unknown (not "nan MiB"), SM unknown (not -3 %); free is believable and kept.
    assert reading.memory_used_mib is None and reading.sm_util is None and reading.memory_free_mib == 80000
    assert tally.rejected == {"not finite": 1, "negative": 1}
    board = TelemetryBoard()
    board.replace(tally.readings, 1.0, tally.census, tally.rejected)
    board.replace(tally.readings, 2.0, tally.census, tally.rejected)
    registry = CollectorRegistry()
    registry.register(TelemetryTrust(board))
    assert metric(registry, "gpu_advisor_telemetry_rejected_series_total", reason="not finite") == 2


def test_the_directory_knows_each_nodes_gpu_memory_from_the_model() -> None:
    state = cluster("gpu-a")
    where: Directory = directory_source(state, [])()
    assert where.gpu_memory_mib == {"gpu-a": 81559}
