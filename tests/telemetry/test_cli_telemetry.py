"""--prometheus on serve, explain and diagnose: a malformed URL or (with --require-telemetry) a silent
Prometheus stops with one clear line and exit 2; a good one feeds live readings into the answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from extender.sources.prometheus import PrometheusTelemetry
from gpu_advisor.cli import main
from gpu_advisor.serve import build_advisor
from tests.fakes.prometheus import FakePrometheus

CLUSTER = {
    "nodes": [{"name": "dgx", "machine": "dgx1-v100"}],
    "pods": [{"name": "train", "namespace": "ml", "node": "dgx", "gpus": 1}],
}
POD = {
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ml"},
    "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
}


def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(CLUSTER))
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(POD))
    return str(tmp_path / "cluster.yaml"), str(tmp_path / "pod.yaml")


def closed_port_url() -> str:
    with FakePrometheus([]) as prom:
        return prom.url  # nothing listens there once closed


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["serve", "--prometheus", "prometheus:9090"], "is not a URL such as http://prometheus.monitoring:9090"),
        (["serve", "--require-telemetry"], "--require-telemetry needs a telemetry source"),
        (["explain", "POD", "--cluster", "CLUSTER", "--prometheus", "http://p:90x0"], "the port is not a number"),
        (["diagnose", "train", "-n", "ml", "--cluster", "CLUSTER", "--prometheus", "ftp://p"], "is not a URL"),
    ],
)
def test_a_malformed_telemetry_setting_exits_2_with_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, pod = files(tmp_path)
    argv = [{"POD": pod, "CLUSTER": cluster}.get(a, a) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_require_telemetry_refuses_a_prometheus_that_does_not_answer(capsys: pytest.CaptureFixture[str]) -> None:
    url = closed_port_url()
    assert main(["serve", "--prometheus", url, "--require-telemetry"]) == 2
    assert f"prometheus at {url} does not answer" in capsys.readouterr().err


def test_serve_polls_a_prometheus_that_answers_with_the_window_asked_for() -> None:
    with FakePrometheus([]) as prom:
        advisor, background = build_advisor("simulated", prom.url, None, require_telemetry=True, telemetry_window_s=30)
        assert "vector(1)" in prom.queries
    (source,) = [p for p in background.parts if isinstance(p, PrometheusTelemetry)]
    assert source.window_s == 30 and advisor.telemetry is source.board


def test_explain_scores_with_live_readings_from_prometheus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster, pod = files(tmp_path)
    # Every GPU of dgx 88 % busy holding 39 GiB, none attributed to a pod: busy, held by someone unknown.
    series = [
        ({"__name__": name, "Hostname": "dgx", "gpu": str(g), "UUID": f"GPU-{g}"}, value)
        for g in range(8)
        for name, value in (
            ("DCGM_FI_DEV_GPU_UTIL", 88.0),
            ("DCGM_FI_DEV_FB_USED", 39936),
            ("DCGM_FI_DEV_FB_FREE", 41984),
        )
    ]
    with FakePrometheus(series) as prom:
        assert main(["explain", pod, "--cluster", cluster, "--prometheus", prom.url, "--json"]) == 0
    (ranked,) = json.loads(capsys.readouterr().out)["ranked"]
    assert "busy (SM 88%, 39 GiB VRAM) held by something we don't know about" in ranked["reason"]
