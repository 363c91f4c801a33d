"""The manifests' telemetry pieces: the commented-in Prometheus URL patch renders into the advisor's
arguments, and the documented ServiceMonitor labels series the way the advisor reads first."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from extender.model.series_map import SeriesPlace, directory, place_series
from extender.sources.prometheus import prometheus_url
from tests.manifests.rendering import REPO, kubectl


def test_uncommenting_the_patch_passes_a_valid_prometheus_url_to_the_advisor(tmp_path: Path) -> None:
    copy = tmp_path / "manifests"
    shutil.copytree(REPO / "manifests", copy)
    kustomization = copy / "kustomization.yaml"
    text = kustomization.read_text()
    commented = [
        "# patches:",
        "#   - path: telemetry/prometheus-url.yaml",
        "#     target: {kind: Deployment, name: gpu-advisor}",
    ]
    assert all(line in text for line in commented), "the commented-in patch is where the README says"
    for line in commented:
        text = text.replace(line, line.removeprefix("# "))
    kustomization.write_text(text)
    out = subprocess.run([kubectl(), "kustomize", str(copy)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    docs: list[dict[str, Any]] = [d for d in yaml.safe_load_all(out.stdout) if d]
    deployment = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "gpu-advisor")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    (flag,) = [a for a in args if a.startswith("--prometheus=")]
    assert prometheus_url(flag.removeprefix("--prometheus=")) == "http://prometheus-operated.monitoring.svc:9090"


def test_the_servicemonitor_puts_the_node_in_the_label_read_first_and_keeps_pod_labels() -> None:
    monitor = yaml.safe_load((REPO / "manifests/telemetry/dcgm-exporter-servicemonitor.yaml").read_text())
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["honorLabels"] is True
    (relabel,) = endpoint["relabelings"]
    assert (relabel["sourceLabels"], relabel["targetLabel"]) == (["__meta_kubernetes_pod_node_name"], "node")
    # A series so labelled lands on its node however the exporter names itself.
    labels = {"node": "gpu-node-7", "Hostname": "nvidia-dcgm-exporter-57pvc", "gpu": "0", "instance": "10.1.2.3:9400"}
    place = place_series(labels, directory(["gpu-node-7"], []))
    assert isinstance(place, SeriesPlace) and (place.node, place.via) == ("gpu-node-7", "node")
