"""Telemetry from Prometheus, tested against a local server built from real DCGM exporter lines."""

from __future__ import annotations

import time
from pathlib import Path

from extender.model.readings import TelemetryBoard
from extender.model.topology import Gpu
from extender.sources.prometheus import PrometheusTelemetry
from tests.fake_prometheus import FakePrometheus, parse_exposition

DATA = Path(__file__).parents[1] / "data" / "telemetry"


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
    gpu = Gpu(0, uuid="GPU-c89b14a3-ce7c-6725-8424-b55d37d9c332")
    reading = board.reading("aks-gpunp-66230965-vmss000000", gpu)
    assert reading is not None
    assert (reading.sm_util, reading.memory_used_mib, reading.memory_free_mib) == (37, 20480, 61440)
    assert reading.memory_total_mib == 81920
    assert not board.is_stale(reading, time.time())
    assert board.reading("nvidia-dcgm-exporter-57pvc", gpu) is None, "the exporter pod is not the node"


def test_one_x_names_with_hostname_labels_are_read() -> None:
    series = lines("dcgm-exporter_metrics_1x-names_issue188.txt")
    with FakePrometheus(series) as prom:
        board = TelemetryBoard()
        PrometheusTelemetry(prom.url, board).refresh()
        assert "DCGM_FI_DEV_GPU_UTIL" in prom.queries and "dcgm_gpu_utilization" in prom.queries
    reading = board.reading("dcgm-exporter-6ldbb", Gpu(0, uuid="GPU-c1f38265-5e7c-0a81-14a0-240a35ea8160"))
    assert reading is not None and reading.sm_util == 0


def test_mig_instance_series_are_not_taken_for_whole_gpus() -> None:
    series = lines("dcgm-exporter_metrics_MIG_oldnamespace_issue272.txt")
    assert any(labels.get("GPU_I_ID") for labels, _ in series)
    with FakePrometheus(series) as prom:
        board = TelemetryBoard()
        assert PrometheusTelemetry(prom.url, board).refresh() == 0


def test_a_sample_older_than_the_limit_is_stale_by_its_own_time_not_the_querys() -> None:
    util = lines("dcgm-exporter_metrics_prometheus-scraped_gpu-operator472.txt", default_value=90)
    series = util + renamed(util, "DCGM_FI_DEV_FB_USED", 100) + renamed(util, "DCGM_FI_DEV_FB_FREE", 100)
    with FakePrometheus(series, sampled_at=time.time() - 93) as prom:
        board = TelemetryBoard(max_age_s=60)
        PrometheusTelemetry(prom.url, board).refresh()
    reading = board.reading("aks-gpunp-66230965-vmss000000", Gpu(0))
    assert reading is not None and board.is_stale(reading, time.time())
    assert round(board.age(reading, time.time()) or 0) in (93, 94)


def test_an_unreachable_prometheus_keeps_the_old_readings_and_says_why() -> None:
    with FakePrometheus([]) as prom:
        url = prom.url
    board = TelemetryBoard()
    source = PrometheusTelemetry(url, board, interval_s=0.05, timeout_s=0.5)
    source.start()
    try:
        deadline = time.time() + 5
        while board.last_error is None and time.time() < deadline:
            time.sleep(0.02)
    finally:
        source.stop()
    assert board.last_error is not None and "refused" in board.last_error.lower()
