"""Telemetry: what DCGM fields mean, how readings age, and the Prometheus source against a local
stand-in (series mapping is in test_series_map; the real Prometheus runs in tests/telemetry)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from extender.model.dcgm import reading_from_fields
from extender.model.pods import PodRequest
from extender.model.readings import GpuReading, TelemetryBoard
from extender.model.series_readings import Sample, readings_from_samples
from extender.model.topology import Gpu
from extender.sources.prometheus import PrometheusTelemetry, PrometheusUrlError, prometheus_url
from tests.fakes.prometheus import FakePrometheus, parse_exposition
from tests.unit.test_series_map import CLUSTER, GPU0

DATA = Path(__file__).parents[1] / "data" / "telemetry"


@pytest.mark.parametrize(
    ("fields", "sm", "source", "used", "total"),
    [
        # SM_ACTIVE 0.35 wins over GR_ENGINE and the coarse GPU_UTIL flag
        ({"sm_active": 0.35, "gr_engine": 0.5, "gpu_util": 100}, 35, "DCGM_FI_PROF_SM_ACTIVE", None, None),
        ({"gr_engine": 0.5, "gpu_util": 100}, 50, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", None, None),
        ({"gpu_util": 100}, 100, "DCGM_FI_DEV_GPU_UTIL", None, None),
        # used 1000 + reserved 500 = 1500 of 1000 + 500 + free 2500 = 4000
        ({"fb_used": 1000, "fb_reserved": 500, "fb_free": 2500}, None, None, 1500, 4000),
        ({"fb_used": 1000, "fb_free": 3000}, None, None, 1000, 4000),
    ],
)
def test_fields_mean_sm_activity_and_vram(
    fields: dict[str, float], sm: float | None, source: str | None, used: float | None, total: float | None
) -> None:
    reading = reading_from_fields(fields, at=0.0)
    assert reading.sm_util == (pytest.approx(sm) if sm is not None else None)
    assert (reading.sm_source, reading.memory_used_mib, reading.memory_total_mib) == (source, used, total)


def test_every_series_is_counted_matched_or_unmatched_one_example_per_shape() -> None:
    samples = [
        Sample("DCGM_FI_DEV_FB_USED", {"Hostname": "nvidia-dcgm-exporter-57pvc", **GPU0}, 1, 0.0),
        Sample("DCGM_FI_DEV_FB_USED", {"Hostname": "stranger-1", **GPU0}, 1, 0.0),
        Sample("DCGM_FI_DEV_FB_FREE", {"Hostname": "stranger-2", **GPU0}, 1, 0.0),  # same shape
        Sample("DCGM_FI_DEV_FB_USED", {"instance": "10.1.1.1:9400", **GPU0}, 1, 0.0),  # another shape
        Sample("DCGM_FI_DEV_POWER_USAGE", {"Hostname": "stranger-1", **GPU0}, 1, 0.0),  # not read: not counted
    ]
    tally = readings_from_samples(samples, CLUSTER, 0.0)
    census = tally.census
    assert (census.matched, census.unmatched, len(census.examples)) == (1, 3, 2)
    assert [s.labels.get("Hostname") for s, _ in tally.first_misses] == ["stranger-1", None]
    assert list(tally.readings) == [("node-a", "GPU-0000"), ("node-a", "#0")]


def test_a_reading_whose_series_ended_is_stale_at_once_and_a_vanished_gpu_is_remembered() -> None:
    board = TelemetryBoard(max_age_s=60)
    board.replace({("n", "#0"): GpuReading(sm_util=5, at=100.0, ended=True), ("n", "#1"): GpuReading(at=100.0)}, 103)
    ended = board.reading("n", Gpu(0))
    assert ended is not None and board.is_stale(ended, 103.0) and board.age(ended, 103.0) == 3
    board.replace({("n", "#0"): GpuReading(at=200.0)}, 201)
    assert board.reading("n", Gpu(1)) is None and board.last_seen("n", Gpu(1)) == 100.0
    assert board.last_seen("n", Gpu(0)) is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("prometheus:9090", "not a URL"),
        ("ftp://prometheus:9090", "not a URL"),
        ("http://", "not a URL"),
        ("http://prometheus:90x0", "port is not a number"),
        ("http://prometheus:9090/api/v1/query?query=up", "without a query"),
    ],
)
def test_a_malformed_prometheus_url_is_refused_with_the_reason(text: str, problem: str) -> None:
    with pytest.raises(PrometheusUrlError, match=problem):
        prometheus_url(text)


def test_a_good_prometheus_url_loses_only_its_trailing_slash() -> None:
    assert prometheus_url("http://prometheus.monitoring:9090/") == "http://prometheus.monitoring:9090"
    assert prometheus_url("https://thanos.example/prom") == "https://thanos.example/prom"


def lines(name: str, default_value: float | None = None) -> list[tuple[dict[str, str], float]]:
    return parse_exposition((DATA / name).read_text(), default_value)


def renamed(series: list[tuple[dict[str, str], float]], name: str, value: float) -> list[tuple[dict[str, str], float]]:
    """The same real label set under another DCGM field (exporters emit every field with one label set)."""
    return [({**labels, "__name__": name}, value) for labels, _ in series]


def test_prometheus_scraped_series_map_to_the_node_label_and_the_gpu_uuid() -> None:
    # A real series as Prometheus stores it: `node` (added by the scrape config) names the node, while
    # `Hostname` is only the exporter pod's name.
    util = lines("dcgm-exporter_metrics_prometheus-scraped_gpu-operator472.txt", default_value=37)
    series = util + renamed(util, "DCGM_FI_DEV_FB_USED", 20480) + renamed(util, "DCGM_FI_DEV_FB_FREE", 61440)
    with FakePrometheus(series, sampled_at=time.time() - 5) as prom:
        board = TelemetryBoard(max_age_s=60)
        source = PrometheusTelemetry(prom.url, board)
        assert source.refresh() == 2  # keyed by UUID and by index
        assert "last_over_time(DCGM_FI_DEV_FB_USED[600s])" in prom.queries
        assert "avg_over_time(DCGM_FI_DEV_GPU_UTIL[60s])" in prom.queries
    gpu = Gpu(0, uuid="GPU-c89b14a3-ce7c-6725-8424-b55d37d9c332")
    reading = board.reading("aks-gpunp-66230965-vmss000000", gpu)
    assert reading is not None
    assert (reading.sm_util, reading.memory_used_mib, reading.memory_free_mib) == (37, 20480, 61440)
    assert reading.memory_total_mib == 81920
    assert not board.is_stale(reading, time.time())
    assert board.reading("nvidia-dcgm-exporter-57pvc", gpu) is None, "the exporter pod is not the node"


def test_a_series_that_ended_reads_stale_with_its_own_age() -> None:
    util = lines("dcgm-exporter_metrics_prometheus-scraped_gpu-operator472.txt", default_value=90)
    with FakePrometheus(util, sampled_at=time.time() - 12, ended=[util[0][0]]) as prom:
        board = TelemetryBoard(max_age_s=60)
        PrometheusTelemetry(prom.url, board).refresh()
    reading = board.reading("aks-gpunp-66230965-vmss000000", Gpu(0))
    assert reading is not None and reading.ended and reading.sm_util == 90
    assert board.is_stale(reading, time.time()) and round(board.age(reading, time.time()) or 0) in (12, 13)


def test_an_unmatched_shape_is_logged_once_with_the_fix(caplog: pytest.LogCaptureFixture) -> None:
    series = lines("dcgm-exporter_metrics_1x-names_issue188.txt")
    with FakePrometheus(series) as prom:
        board = TelemetryBoard()
        source = PrometheusTelemetry(prom.url, board, where=lambda: CLUSTER)
        with caplog.at_level(logging.WARNING, logger="extender.sources.prometheus"):
            source.refresh()
            source.refresh()
    warnings = [r.getMessage() for r in caplog.records]
    assert (
        len(warnings) == 1 and "dcgm-exporter-6ldbb" in warnings[0] and "__meta_kubernetes_pod_node_name" in warnings[0]
    )
    assert board.census is not None and (board.census.matched, board.census.unmatched) == (0, 1)


def test_an_unreachable_prometheus_keeps_the_old_readings_and_says_why() -> None:
    with FakePrometheus([]) as prom:
        url = prom.url
    board = TelemetryBoard()
    source = PrometheusTelemetry(url, board, interval_s=0.05, timeout_s=0.5)
    with pytest.raises(RuntimeError, match="does not answer"):
        source.check()
    source.start()
    try:
        deadline = time.time() + 5
        while board.last_error is None and time.time() < deadline:
            time.sleep(0.02)
    finally:
        source.stop()
    assert board.last_error is not None and "refused" in board.last_error.lower()
    assert board.up is False and board.poll_errors >= 1


def test_a_gpu_whose_series_left_the_lookback_reads_no_telemetry_since_its_last_sample() -> None:
    from extender.scoring import ScoringPolicy, evaluate
    from extender.sources.snapshot import parse_snapshot

    state = parse_snapshot({"nodes": [{"name": "dgx", "machine": "dgx1-v100"}]}, now=1_000.0).cluster("t")
    node = state.node("dgx")
    assert node is not None
    board = TelemetryBoard(max_age_s=60)
    board.replace({("dgx", f"#{g}"): GpuReading(sm_util=0, at=1_000.0, ended=True) for g in range(8)}, 1_010.0)
    stale = evaluate(PodRequest(gpus=1), node, "dgx", board, ScoringPolicy(), 1_093.0)
    assert "telemetry stale (93 s)" in stale.reason and stale.breakdown["headroom"] == 0.5
    board.replace({}, 1_700.0)  # 10 minutes on, Prometheus' lookback no longer has them
    gone = evaluate(PodRequest(gpus=1), node, "dgx", board, ScoringPolicy(), 1_700.0)
    assert "no telemetry since 1970-01-01T00:16:40Z" in gone.reason and gone.breakdown["headroom"] == 0.5
