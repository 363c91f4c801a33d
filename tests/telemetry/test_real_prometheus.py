"""The Prometheus source end to end against a real Prometheus server scraping replayed DCGM exporters.

Runs the ``prometheus`` binary (Debian's package; ``.ci/run`` installs it). Elsewhere the test skips
when the binary is missing; under ``CI=true`` it fails instead, so CI cannot pass without it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.http.advisor import Advisor
from extender.model.readings import GpuReading, TelemetryBoard
from extender.scoring import ScoringPolicy
from extender.sources.pod_index import directory_source
from extender.sources.prometheus import PrometheusTelemetry
from extender.sources.snapshot import parse_snapshot
from gpu_advisor.app import create_app
from tests.telemetry.exporters import Exporter
from tests.telemetry.prometheus_server import PrometheusServer, job, prometheus_binary
from tests.telemetry.scenario import FIELDS_READ, Site, exporter_pod, sites, snapshot_doc

POLL_LOOKBACK_S = 600


@dataclass
class Running:
    sites: list[Site]
    exporters: dict[str, Exporter]
    prometheus: PrometheusServer
    source: PrometheusTelemetry
    board: TelemetryBoard
    api: TestClient
    first: dict[str, list[tuple[str, GpuReading]]]  # each node's readings after the first poll
    telemetry: dict[str, Any]  # /v1/telemetry after the first poll
    started: float


def _binary() -> str:
    binary = prometheus_binary()
    if binary is None:
        message = "the prometheus binary is missing: apt-get install -y prometheus (.ci/run does)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return binary


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    started = time.monotonic()
    binary = _binary()
    all_sites = sites()
    exporters = {s.job: Exporter(s.page) for s in all_sites}
    jobs = [job(s.job, exporters[s.job].address, s.honor_labels, s.target_labels) for s in all_sites]
    workdir: Path = tmp_path_factory.mktemp("prometheus")
    prometheus = PrometheusServer(binary, workdir, jobs)
    try:
        prometheus.wait_until(f"count(up == 1) == {len(jobs)}")
        # Enough scrapes for the 1-minute SM average to span several alternating samples.
        prometheus.wait_until("count_over_time(DCGM_FI_PROF_SM_ACTIVE[1m]) >= 5")
        snap = parse_snapshot(snapshot_doc(all_sites))
        snap.pods += [exporter_pod(*s.exporter_pod[:2], s.node, s.exporter_pod[2]) for s in all_sites]
        state = snap.cluster("real-prometheus test")
        board = TelemetryBoard(60)
        source = PrometheusTelemetry(prometheus.url, board, where=directory_source(state, snap.pods), resolution_s=1)
        advisor = Advisor(state=state, telemetry=board, policy=ScoringPolicy())
        with TestClient(create_app(advisor), raise_server_exceptions=False) as api:
            source.refresh()
            first = {s.node: board.of_node(s.node) for s in all_sites}
            telemetry = api.get("/v1/telemetry").json()
            yield Running(all_sites, exporters, prometheus, source, board, api, first, telemetry, started)
    finally:
        prometheus.stop()
        for exporter in exporters.values():
            exporter.kill()
    print(f"\nreal-Prometheus test wall time: {time.monotonic() - started:.1f} s")


def _gpu(running: Running, node: str, key: str) -> GpuReading:
    return dict(running.first[node])[key]


def test_every_series_of_every_labelling_style_finds_its_node_and_gpu(running: Running) -> None:
    series = running.telemetry["series"]
    expected = sum(s.page.series_named(FIELDS_READ) for s in running.sites)
    assert (series["matched"], series["unmatched"]) == (expected, 0), series["unmatched_examples"]
    print(f"\nseries matched per label that named the node: {series['by_label']}")
    assert series["by_label"].keys() == {
        "Hostname (exporter pod)",  # hostname-pod, hostname-pod-1x
        "instance (exporter pod IP)",  # servicemonitor-honor-false
        "Hostname",  # servicemonitor-honor-true: a hostNetwork exporter
        "instance",  # gpu-operator-instance-node
    }
    coverage = {n["name"]: (n["gpus"], n["gpus_read"]) for n in running.telemetry["nodes"]}
    assert coverage == {
        "aks-gpunp-66230965-vmss000000": (1, 1),
        "gpu-node-1x": (1, 1),
        "gpu-node-b": (2, 2),
        "sc-starwars-mab9-b00": (2, 2),
        "a100-mig-node": (2, 2),
    }


def test_sm_activity_is_a_window_average_of_the_best_field_there_is(running: Running) -> None:
    aks = _gpu(running, "aks-gpunp-66230965-vmss000000", "#0")
    # SM_ACTIVE alternates 0.2 / 0.8 per scrape: one instant sample reads 20 or 80, the 1-minute
    # average of ≥ 5 samples lies within 20 points of 50.
    assert aks.sm_source == "DCGM_FI_PROF_SM_ACTIVE" and aks.sm_util is not None
    assert 30 <= aks.sm_util <= 70, aks.sm_util
    assert _gpu(running, "gpu-node-b", "#0").sm_source == "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
    assert _gpu(running, "gpu-node-b", "#0").sm_util == pytest.approx(88)
    assert _gpu(running, "sc-starwars-mab9-b00", "#0").sm_source == "DCGM_FI_DEV_GPU_UTIL"
    assert _gpu(running, "gpu-node-1x", "#0").sm_source == "DCGM_FI_DEV_GPU_UTIL"  # dcgm_gpu_utilization


def test_vram_counts_reserved_memory_as_used(running: Running) -> None:
    aks = _gpu(running, "aks-gpunp-66230965-vmss000000", "#0")
    # used 39936 + reserved 512 = 40448 MiB of 39936 + 512 + 41472 = 81920 MiB
    assert (aks.memory_used_mib, aks.memory_total_mib) == (40448, 81920)
    one_x = _gpu(running, "gpu-node-1x", "#0")
    assert (one_x.memory_used_mib, one_x.memory_total_mib) == (1024, 81920)


def test_pods_are_attributed_with_honor_labels_false_and_true_never_to_the_exporter(running: Running) -> None:
    assert _gpu(running, "gpu-node-b", "#0").pod == "default/dcgmproftester"  # from exported_pod
    assert _gpu(running, "gpu-node-b", "#1").pod is None  # the target's pod label is the exporter
    assert _gpu(running, "sc-starwars-mab9-b00", "#0").pod == "gpu-test2/pod"
    assert _gpu(running, "sc-starwars-mab9-b00", "#1").pod is None
    assert running.board.of_pod("default/dcgmproftester")[0][0] == "gpu-node-b GPU 0"
    live = running.api.get("/v1/nodes/gpu-node-b").json()["gpus_live"]
    assert [(g["gpu"], g["pod"], g["sm_pct"], g["vram_used_mib"]) for g in live] == [
        (0, "default/dcgmproftester", 88, 39936),
        (1, None, 0, 0),
    ]


def test_mig_series_become_instance_readings(running: Running) -> None:
    mig = dict(running.first["a100-mig-node"])
    assert sorted(k for k in mig if ":" in k) == ["#0:mig1", "#0:mig2", "#1:mig1"]
    assert (mig["#0:mig2"].mig, mig["#0:mig2"].memory_used_mib, mig["#0:mig2"].memory_total_mib) == (
        "4g.40gb",
        20480,
        40960,
    )
    assert mig["#0:mig1"].sm_source == "DCGM_FI_PROF_GR_ENGINE_ACTIVE"


def _dry_run_reason(api: TestClient, site: str) -> str:
    pod = {
        "kind": "Pod",
        "metadata": {"name": "probe", "namespace": "default"},
        "spec": {
            "nodeSelector": {"site": site},
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
        },
    }
    answer = api.post("/v1/dry-run", json=pod).json()
    return str(answer["ranked"][0]["reason"])


def test_a_killed_exporter_reads_stale_within_one_poll_and_scores_neutral(running: Running) -> None:
    assert "stale" not in _dry_run_reason(running.api, "hostname-pod")
    killed = time.monotonic()
    running.exporters["hostname-pod"].kill()
    # Prometheus notices on its next scrape (1 s) and marks the series stale; one poll after that:
    running.prometheus.wait_until('up{job="hostname-pod"} == 0')
    running.source.refresh()
    detected = time.monotonic() - killed
    reading = dict(running.board.of_node("aks-gpunp-66230965-vmss000000"))["#0"]
    age = running.board.age(reading, time.time())
    print(f"\nexporter killed → stale after {detected:.1f} s (one poll), reading age {age:.0f} s")
    assert reading.ended and running.board.is_stale(reading, time.time())
    assert reading.memory_used_mib == 40448, "the last value is kept, aging"
    assert age is not None and 0 < age < POLL_LOOKBACK_S
    reason = _dry_run_reason(running.api, "hostname-pod")
    assert "telemetry stale (" in reason and " s)" in reason, reason
    # The other exporters are unaffected, and nothing became unmatched.
    assert not dict(running.board.of_node("gpu-node-b"))["#0"].ended
    series = running.api.get("/v1/telemetry").json()["series"]
    assert series["unmatched"] == 0
    assert time.monotonic() - running.started < 60
