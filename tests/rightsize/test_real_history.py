"""``gpu-advisor rightsize`` against a real Prometheus holding three days of backfilled DCGM history.

Four workloads on one H100 node (81559 MiB per GPU), scraped every 60 s for 72 h (4320 samples):

=====================  =========================================================================
Job train-big          4 GPUs; GPU 0 at SM 60 %, 40 GiB; GPUs 1-3 at 0 %, 0.5 GiB
Deployment chat        1 GPU; 30-scrape cycle: 25 × 10 %, 4 × 30 %, 1 × 90 % SM; VRAM 25 GiB, 27 GiB
                       in the 90 % scrape. Two pods in turn, 36 h each: the first one is gone
                       (its owner is read from its name), the second is latency-sensitive.
StatefulSet notebook   1 GPU at 0 % SM holding 8 GiB
CronJob nightly-eval   2 GPUs at 85 %, 70 GiB each
=====================  =========================================================================

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

from gpu_advisor.cli import main
from tests.rightsize.history import Gpu, backfill, gpu_labels, openmetrics, promtool_binary
from tests.telemetry.prometheus_server import PrometheusServer, prometheus_binary

SAMPLES, INTERVAL_S = 4320, 60  # 72 h
NODE = "gpu-node-a"
CHAT_SM = (0.1,) * 25 + (0.3,) * 4 + (0.9,)
CHAT_VRAM = (25600.0,) * 29 + (27648.0,)
GONE_CHAT, CHAT = "chat-7d9f8b6c5b-x2x4z", "chat-7d9f8b6c5b-q9wzk"


def _history() -> list[Gpu]:
    train = [Gpu(gpu_labels(NODE, 0, "ml", "train-big-q7xkp"), (0.6,), (40960.0,))]
    train += [Gpu(gpu_labels(NODE, i, "ml", "train-big-q7xkp"), (0.0,), (512.0,)) for i in (1, 2, 3)]
    half = SAMPLES // 2
    chat = [
        Gpu(gpu_labels(NODE, 4, "serving", GONE_CHAT), CHAT_SM, CHAT_VRAM, samples=half),
        Gpu(gpu_labels(NODE, 4, "serving", CHAT, exported=True), CHAT_SM, CHAT_VRAM, first=half),
    ]
    notebook = [Gpu(gpu_labels(NODE, 5, "research", "notebook-ana-0", exported=True), (0.0,), (8192.0,))]
    nightly = [Gpu(gpu_labels(NODE, i, "ml", "nightly-eval-29412345-m5p8r"), (0.85,), (71680.0,)) for i in (6, 7)]
    return train + chat + notebook + nightly


def _pod(namespace: str, name: str, owner: tuple[str, str] | None, **meta: Any) -> dict[str, Any]:
    refs = [{"kind": owner[0], "name": owner[1], "controller": True}] if owner else []
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "ownerReferences": refs, **meta},
        "spec": {"nodeName": NODE, "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
        "status": {"phase": "Running"},
    }


def _cluster() -> dict[str, Any]:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": {}}, "status": {}}
    pods = [
        _pod("ml", "train-big-q7xkp", ("Job", "train-big")),
        _pod(
            "serving",
            CHAT,
            ("ReplicaSet", "chat-7d9f8b6c5b"),
            labels={"pod-template-hash": "7d9f8b6c5b"},
            annotations={"gpu-advisor.io/latency-sensitive": "true"},
        ),
        _pod("research", "notebook-ana-0", ("StatefulSet", "notebook-ana")),
        _pod("ml", "nightly-eval-29412345-m5p8r", ("Job", "nightly-eval-29412345")),
    ]
    return {"apiVersion": "v1", "kind": "List", "items": [node, *pods]}


def _binaries() -> tuple[str, str]:
    prometheus, promtool = prometheus_binary(), promtool_binary()
    if prometheus is None or promtool is None:
        message = "the prometheus and promtool binaries are missing: apt-get install -y prometheus (.ci/run does)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return prometheus, promtool


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    prometheus, promtool = _binaries()
    workdir: Path = tmp_path_factory.mktemp("rightsize")
    start = (int(time.time()) - 80 * 3600) // 3600 * 3600  # 80 h ago: 72 h of history, ending 8 h ago
    backfill(promtool, openmetrics(_history(), start, SAMPLES, INTERVAL_S), workdir)
    cluster = workdir / "cluster.json"
    cluster.write_text(json.dumps(_cluster()))
    server = PrometheusServer(prometheus, workdir, [], retention="30d")
    try:
        server.wait_until("count(DCGM_FI_PROF_SM_ACTIVE) >= 0 or vector(1)")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["rightsize", "--cluster", str(cluster), "--prometheus", server.url, "--json"])
        assert code == 0
        yield json.loads(out.getvalue())
    finally:
        server.stop()


def _workload(report: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [
        w for w in report["workloads"] if (w["workload"]["kind"], w["workload"]["name"]) == (kind, name)
    ]
    assert len(found) == 1, [w["workload"] for w in report["workloads"]]
    return found[0]


def test_the_over_provisioned_trainer_needs_one_gpu_of_its_four(report: dict[str, Any]) -> None:
    w = _workload(report, "Job", "train-big")
    advice = w["recommendation"]
    assert advice["summary"] == "4 → 1 GPU" and advice["action"] == "fewer-gpus"
    # SM demand: (60 + 0 + 0 + 0) % = 0.6 GPU at p95 → ⌈0.6 ÷ 0.8⌉ = 1;
    # VRAM: (40960 + 3 × 512) × 1.2 = 50995 MiB ≤ one 81559 MiB GPU.
    assert (w["gpus_requested"], w["hours_observed"]) == (4, 72)
    assert w["gpu_hours_held"] == 288  # 4 GPUs × 72 h
    assert w["gpu_hours_idle"] == pytest.approx(244.8)  # 288 − 72 h × 0.60
    assert w["sm_percent"] == {"p50": 15, "p95": 15, "max": 60}  # the mean of (60, 0, 0, 0); the highest
    assert w["vram_mib"] == {"p95": 40960, "peak": 40960}
    assert (advice["gpus_freed"], advice["gpu_hours_freed"]) == (3, 216)  # 3 GPUs × 72 h
    assert advice["confidence"] == "high" and advice["share_of_window_observed"] == pytest.approx(72 / 168, abs=1e-3)


def test_the_bursty_inference_server_fits_a_3g_40gb_mig_slice(report: dict[str, Any]) -> None:
    w = _workload(report, "Deployment", "chat")
    advice = w["recommendation"]
    assert advice["summary"] == "MIG 3g.40gb"
    # p50 10 %; p95 30 % (samples 3600..4175 of 4320 sorted; rank 0.95 × 4319 = 4103); max 90 %.
    assert w["sm_percent"] == {"p50": 10, "p95": 30, "max": 90}
    assert w["vram_mib"] == {"p95": 25600, "peak": 27648}
    # 27648 MiB × 1.2 = 32.4 GB ≤ 40 GB; 3/7 = 0.43 of the SMs ≥ 30 % ÷ 80 % = 0.375 (2g.20gb: 20 GB, too small).
    assert w["pods"] == [f"serving/{CHAT}", f"serving/{GONE_CHAT}"]
    assert (w["gpus_requested"], w["hours_observed"], w["gpu_hours_held"]) == (1, 72, 72)  # 36 h + 36 h
    # Mean SM (25 × 10 + 4 × 30 + 90) ÷ 30 = 15.33 %: 72 h × (1 − 0.15333) = 60.96 idle.
    assert w["gpu_hours_idle"] == pytest.approx(60.96)
    assert advice["gpus_freed"] == pytest.approx(4 / 7, abs=1e-3)  # 1 − 3/7
    assert advice["gpu_hours_freed"] == pytest.approx(72 * 4 / 7, abs=1e-2)
    assert "no NVLink" in advice["risk"]


def test_the_idle_notebook_should_scale_to_zero(report: dict[str, Any]) -> None:
    w = _workload(report, "StatefulSet", "notebook-ana")
    assert w["recommendation"]["summary"] == "idle: scale to zero or delete"
    assert (w["gpu_hours_held"], w["gpu_hours_idle"]) == (72, 72)  # 1 GPU × 72 h at 0 %
    assert (w["recommendation"]["gpus_freed"], w["vram_mib"]["peak"]) == (1, 8192)


def test_the_right_sized_job_keeps_its_gpus(report: dict[str, Any]) -> None:
    w = _workload(report, "CronJob", "nightly-eval")
    # SM demand 2 × 85 % = 1.7 GPUs ÷ 0.8 = 2.125 → 3 ≥ the 2 it holds: keep.
    assert w["recommendation"]["summary"] == "keep" and w["recommendation"]["gpus_freed"] == 0
    assert (w["gpu_hours_held"], w["gpu_hours_idle"]) == (144, pytest.approx(21.6))  # 2 × 72 h × 15 %


def test_the_report_lists_most_idle_gpu_hours_first_and_sums_them(report: dict[str, Any]) -> None:
    order = [w["workload"]["name"] for w in report["workloads"]]
    assert order == ["train-big", "notebook-ana", "chat", "nightly-eval"]  # 244.8, 72, 60.96, 21.6
    assert report["totals"]["gpu_hours_held"] == 576  # 288 + 72 + 72 + 144
    assert report["totals"]["gpu_hours_idle"] == pytest.approx(399.36)
    assert report["totals"]["gpus_freed"] == pytest.approx(3 + 4 / 7 + 1, abs=1e-3)
