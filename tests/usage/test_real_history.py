"""``gpu-advisor usage`` against a real Prometheus holding a day of backfilled kube-state-metrics and
DCGM exporter history, scraped every 60 s (1440 samples), by namespace and by the ``team`` label:

=========================  ===========================  ========================================
pod (namespace, team)      asks, on                     Running; DCGM
=========================  ===========================  ========================================
Job train-a (ml, research)  2 × nvidia.com/gpu, H100     24 h; GPU 0 at 50 % SM, GPU 1 at 0 %
Deployment infer (ml,       1 × mig-3g.40gb, H100        12 h (Pending the first 12 h); 70 % SM
platform)
Deployment api, 2 pods      1 × mig-1g.10gb each, H100   24 h; no DCGM series (unmetered)
(web, platform)
StatefulSet nb, 2 pods      1 × nvidia.com/gpu each, T4  24 h; 20 % SM each (one GPU, 4 shares)
(notebooks, research)       time-sliced 4 ways
bare pod queued-0 (ml)      8 × nvidia.com/gpu           never Running: holds nothing
Job short (ci)              1 × nvidia.com/gpu, H100     9 min (scrapes 61–69, then gone): between
                                                         two 15-min steps, asked exactly
Job limited (ci)            1 × nvidia.com/gpu limit     the last 60 min; no request series
                            only, H100
Job rerun (batch)           1 × nvidia.com/gpu, H100     scrapes 100–129, then started again (a new
                                                         uid): Pending 400–409, Running 410–447
Job blip (batch)            1 × nvidia.com/gpu, H100     Pending 200–210, Running 211–223, then
                                                         Succeeded: no step sees it Running
=========================  ===========================  ========================================

Runs the ``prometheus`` and ``promtool`` binaries (Debian's package; ``.ci/run`` installs it). Elsewhere
the test skips when they are missing; under ``CI=true`` it fails instead.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extender.sources.usage_history import UsageHistory
from gpu_advisor.cli import main
from tests.rightsize.history import Gpu, gpu_labels, promtool_binary
from tests.telemetry.prometheus_server import PrometheusServer, prometheus_binary
from tests.usage.block_backfill import backfill_blocks
from tests.usage.history import Series, node_series, pod_series

SAMPLES, INTERVAL_S, HALF = 1440, 60, 720  # 24 h
H100, T4 = "h100-node", "t4-node"


def _kube() -> list[Series]:
    rs = ("ReplicaSet", "infer-7d9f8b6c5b")
    return [
        node_series(H100, "NVIDIA-H100-80GB-HBM3"),
        node_series(T4, "Tesla-T4", replicas=4, strategy="time-slicing"),
        *pod_series("ml", "train-a-x7k2p", H100, "nvidia_com_gpu", 2, ("Job", "train-a"), {"team": "research"}),
        *pod_series("ml", "infer-7d9f8b6c5b-q9wzk", H100, "nvidia_com_mig_3g_40gb", 1, rs, {"team": "platform"}, HALF),
        *pod_series(
            "web",
            "api-5c8d7f9b4-aaaaa",
            H100,
            "nvidia_com_mig_1g_10gb",
            1,
            ("ReplicaSet", "api-5c8d7f9b4"),
            {"team": "platform"},
        ),
        *pod_series(
            "web",
            "api-5c8d7f9b4-bbbbb",
            H100,
            "nvidia_com_mig_1g_10gb",
            1,
            ("ReplicaSet", "api-5c8d7f9b4"),
            {"team": "platform"},
        ),
        *pod_series("notebooks", "nb-0", T4, "nvidia_com_gpu", 1, ("StatefulSet", "nb"), {"team": "research"}),
        *pod_series("notebooks", "nb-1", T4, "nvidia_com_gpu", 1, ("StatefulSet", "nb"), {"team": "research"}),
        *pod_series("ml", "queued-0", H100, "nvidia_com_gpu", 8, None, {}, SAMPLES),
        *pod_series("ci", "short-x1", H100, "nvidia_com_gpu", 1, ("Job", "short"), {}, lives=(61, 70)),
        *pod_series("ci", "limited-x2", H100, "nvidia_com_gpu", 1, ("Job", "limited"), {}, 1380, asked_by="limits"),
        *pod_series("batch", "rerun-0", H100, "nvidia_com_gpu", 1, ("Job", "rerun"), {}, 100, lives=(100, 130)),
        *pod_series(
            "batch", "rerun-0", H100, "nvidia_com_gpu", 1, ("Job", "rerun"), {}, 410, (400, 448), uid="uid-rerun-0-2"
        ),
        *pod_series(
            "batch", "blip-0", H100, "nvidia_com_gpu", 1, ("Job", "blip"), {}, 211, (200, 235), running_until=224
        ),
    ]


def _dcgm() -> list[Gpu]:
    mig = gpu_labels(H100, 2, "ml", "infer-7d9f8b6c5b-q9wzk") | {"GPU_I_PROFILE": "3g.40gb", "GPU_I_ID": "1"}
    return [
        Gpu(gpu_labels(H100, 0, "ml", "train-a-x7k2p"), (0.5,), (40960.0,)),
        Gpu(gpu_labels(H100, 1, "ml", "train-a-x7k2p"), (0.0,), (512.0,)),
        Gpu(mig, (0.7,), (20480.0,), first=HALF),
        Gpu(gpu_labels(T4, 0, "notebooks", "nb-0"), (0.2,), (4096.0,), total_mib=15360),
        Gpu(gpu_labels(T4, 0, "notebooks", "nb-1"), (0.2,), (2048.0,), total_mib=15360),
    ]


def _binaries() -> tuple[str, str]:
    prometheus, promtool = prometheus_binary(), promtool_binary()
    if prometheus is None or promtool is None:
        message = "the prometheus and promtool binaries are missing: apt-get install -y prometheus (.ci/run does)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return prometheus, promtool


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    prometheus, promtool = _binaries()
    workdir: Path = tmp_path_factory.mktemp("usage")
    start = (int(time.time()) - 30 * 3600) // 3600 * 3600  # 24 h of history, ending 6 h ago
    backfill_blocks(promtool, _kube(), _dcgm(), start, SAMPLES, INTERVAL_S, workdir)  # as the benchmark does
    running = PrometheusServer(prometheus, workdir, [], retention="30d")
    try:
        running.wait_until("vector(1)")
        yield running
    finally:
        running.stop()


def _report(server: PrometheusServer, *argv: str) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["usage", "--prometheus", server.url, "--window", "2d", "--json", *argv]) == 0
    doc: dict[str, Any] = json.loads(out.getvalue())
    return {t["tenant"]: t for t in doc["tenants"]} | {"totals": doc["totals"]}


def test_by_namespace_the_hours_match_the_hand_count(server: PrometheusServer) -> None:
    got = _report(server)
    ml, web, notebooks = got["ml"], got["web"], got["notebooks"]
    # ml: train-a 2 GPUs × 24 h = 48; infer 3/7 of a GPU × 12 h Running = 5.142857 (queued-0 never ran).
    assert ml["allocated_gpu_hours"] == pytest.approx(48 + 12 * 3 / 7, abs=1e-3) and ml["pods"] == 2
    # Used: 24 h × 50 % + 24 h × 0 % = 12; infer 12 h × 70 % × 3/7 = 3.6. Idle: 53.143 − 15.6.
    assert ml["used_gpu_hours"] == pytest.approx(15.6, abs=1e-3)
    assert ml["idle_gpu_hours"] == pytest.approx(48 + 12 * 3 / 7 - 15.6, abs=1e-3)
    assert ml["by_mode"] == {"whole": 48, "mig": pytest.approx(5.143, abs=1e-3), "time-slicing": 0, "mps": 0}
    # The 3g.40gb slice: 1 instance × 12 h = 12 instance-hours, × 3 slices = 36 slice-hours.
    assert ml["mig"]["3g.40gb"] == {
        "instance_hours": 12,
        "slice_hours": 36,
        "gpu_hours": pytest.approx(36 / 7, abs=1e-3),
    }
    assert ml["by_product"] == {"NVIDIA-H100-80GB-HBM3": pytest.approx(48 + 36 / 7, abs=1e-3)}
    assert [w["workload"] for w in ml["top_workloads"]] == ["ml/Job/train-a", "ml/Deployment/infer"]
    # web: 2 pods × 1g.10gb (1/7) × 24 h = 6.857; 48 slice-hours; no DCGM series: used unknown, not 0.
    assert web["allocated_gpu_hours"] == pytest.approx(48 / 7, abs=1e-3) and web["mig"]["1g.10gb"]["slice_hours"] == 48
    assert (web["used_gpu_hours"], web["idle_gpu_hours"], web["metered_gpu_hours"]) == (None, None, 0)
    # notebooks: 2 shares × 1/4 × 24 h = 12 time-sliced GPU-hours; used 2 × 24 h × 20 % × 1/4 = 2.4.
    assert notebooks["by_mode"]["time-slicing"] == 12 and notebooks["used_gpu_hours"] == pytest.approx(2.4)
    assert notebooks["idle_gpu_hours"] == pytest.approx(9.6) and notebooks["vram_peak_mib"] == 4096
    # ci: short 1 GPU × 9 min = 0.15 (missed by the 15-min steps, read exactly) + limited 1 × 60 min = 1.
    assert got["ci"]["allocated_gpu_hours"] == pytest.approx(1.15, abs=1e-3) and got["ci"]["pods"] == 2
    # Most allocated first: 53.1, 12, 6.9, batch's 1.35 (below), 1.15.
    assert list(got)[:5] == ["ml", "notebooks", "web", "batch", "ci"]


def test_a_pod_started_again_and_one_running_between_two_steps_count_their_samples(server: PrometheusServer) -> None:
    batch = _report(server)["batch"]
    # The 15-min steps fall on scrapes 15k. rerun-0, 1 GPU: its first life reads Running at steps 105
    # and 120: (90, 105] holds scrapes 100–105 = 6, (105, 120] is whole = 15, (120, 135] holds 121–129
    # = 9: 30 min. Its second life (a new uid) reads 0 at 405 and Running at 420 and 435, and nothing
    # at 450 (its last sample, 447, is 3 min old: within Prometheus's 5-min lookback, but not the last
    # scrape interval's): 410–420 = 11 + 15 + 436–447 = 12: 38 min.
    # blip-0 reads 0 at steps 210 and 225 and was Running between, 211–223: 13 min, counted over the
    # window. 30 + 38 + 13 = 81 min = 1.35 GPU-hours.
    assert batch["allocated_gpu_hours"] == pytest.approx(81 / 60, abs=1e-3) and batch["pods"] == 2
    assert batch["by_mode"]["whole"] == pytest.approx(1.35, abs=1e-3)


def test_by_team_label_the_tenants_add_up_across_namespaces(server: PrometheusServer) -> None:
    got = _report(server, "--by", "label:team")
    # research: train-a 48 + nb 12 = 60 allocated; used 12 + 2.4 = 14.4; idle 36 + 9.6 = 45.6.
    research, platform = got["research"], got["platform"]
    assert (research["allocated_gpu_hours"], research["idle_gpu_hours"]) == (60, pytest.approx(45.6, abs=1e-3))
    assert research["used_gpu_hours"] == pytest.approx(14.4, abs=1e-3)
    # platform: infer 36/7 + api 48/7 = 12 allocated; metered only infer: used 3.6 of 5.143.
    assert platform["allocated_gpu_hours"] == pytest.approx(12, abs=1e-3)
    assert platform["metered_gpu_hours"] == pytest.approx(36 / 7, abs=1e-3)
    assert platform["idle_gpu_hours"] == pytest.approx(36 / 7 - 3.6, abs=1e-3)
    # 60 + 12, and with no team ci's 1.15 and batch's 81 min = 1.35: 74.5, as by namespace.
    assert got["totals"]["allocated_gpu_hours"] == pytest.approx(74.5, abs=1e-3)


def test_by_workload_deployments_are_read_through_their_replica_sets(server: PrometheusServer) -> None:
    got = _report(server, "--by", "workload")
    assert set(got) - {"totals"} == {
        "ml/Job/train-a",
        "ml/Deployment/infer",
        "web/Deployment/api",
        "notebooks/StatefulSet/nb",
        "ci/Job/short",
        "ci/Job/limited",
        "batch/Job/rerun",
        "batch/Job/blip",
    }
    assert got["web/Deployment/api"]["pods"] == 2


def test_the_table_reads_no_vram_peaks_and_the_same_hours(server: PrometheusServer) -> None:
    history = UsageHistory(server.url)
    end, window = time.time(), 2 * 86400
    with_peaks, without = history.pods(end, window), history.pods(end, window, vram=False)
    assert {p.key: p.vram_peak_mib for p in with_peaks}["notebooks/nb-0"] == 4096
    assert all(p.vram_peak_mib is None for p in without)
    assert {p.key: p.used_gpu_hours for p in without} == {p.key: p.used_gpu_hours for p in with_peaks}
    assert sum(p.used_gpu_hours or 0 for p in without) == pytest.approx(12 + 3.6 + 2.4, abs=1e-3)  # as by team
