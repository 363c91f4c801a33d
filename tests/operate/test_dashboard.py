"""The Grafana dashboard: generated from its source, valid, and querying only series that exist."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

from fastapi.testclient import TestClient

from extender.agent.metrics import dcgm_families
from gpu_advisor.app import Edge, create_apps
from gpu_advisor.serve import build_advisor
from tests.fakes.apiserver import FakeApiServer, node
from tests.fakes.prometheus import FakePrometheus
from tests.kube.test_kube_source import kubeconfig
from tests.operate.dashboard import DASHBOARD_JSON, render

NAME = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{|\[|\))")
GROUPING = re.compile(r"\b(?:by|without)\s*\([^)]*\)")
PROMQL = {"sum", "max", "min", "avg", "count", "rate", "histogram_quantile", "max_over_time", "vector"}
SUFFIXES = ("_total", "_bucket", "_sum", "_count")


def queries() -> list[str]:
    doc = json.loads(DASHBOARD_JSON.read_text())
    return [t["expr"] for p in doc["panels"] for t in p.get("targets", [])]


def metric_names(expr: str) -> set[str]:
    """The series a PromQL expression selects: names before a selector, range or closing parenthesis."""
    return {n for n in NAME.findall(GROUPING.sub("", expr)) if n not in PROMQL}


def family(name: str) -> str:
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return name


def served_families(tmp_path: Path) -> set[str]:
    """# TYPE lines of /metrics from an advisor assembled as `serve --cluster kube --prometheus` does."""
    with FakeApiServer() as api, FakePrometheus([]) as prometheus:
        api.put("nodes", node("gpu-1"))
        advisor, background = build_advisor("kube", prometheus.url, None, kubeconfig(tmp_path, api.url))
        plain, _ = create_apps(Edge(advisor))
        with TestClient(plain) as client:
            text = client.get("/metrics").text
        background.stop()
    agent_view = SimpleNamespace(node="gpu-1", nvml=None, topology=None, allocation=None)
    return {family(line.split()[2]) for line in text.splitlines() if line.startswith("# TYPE ")} | {
        g.name for g in dcgm_families(agent_view)
    }


def test_the_committed_dashboard_is_what_its_source_generates() -> None:
    assert DASHBOARD_JSON.read_text() == render(), "regenerate: python -m tests.operate.dashboard"


def test_the_dashboard_is_grafana_json_with_a_prometheus_data_source_variable() -> None:
    doc = json.loads(DASHBOARD_JSON.read_text())
    assert doc["uid"] == "gpu-advisor" and doc["title"] == "gpu-advisor"
    (variable,) = doc["templating"]["list"]
    assert variable["type"] == "datasource" and variable["query"] == "prometheus"
    titles = [p["title"] for p in doc["panels"] if p["type"] == "row"]
    assert titles == [
        "Scheduler extender",
        "Admission advisor",
        "Cluster model and telemetry",
        "Node agents",
        "GPUs: allocated against used (DCGM)",
        "GPU-hours by tenant (the last GET /v1/usage report)",
    ]
    ids = [p["id"] for p in doc["panels"]]
    assert len(ids) == len(set(ids)), "every panel has its own id"


def test_every_series_the_dashboard_queries_is_served(tmp_path: Path) -> None:
    served = served_families(tmp_path)
    asked = {family(n) for expr in queries() for n in metric_names(expr)}
    assert "gpu_advisor_extender_requests" in asked and "DCGM_FI_DEV_GPU_UTIL" in asked
    # `up` is Prometheus' own series for every scrape target (here: the node agents).
    assert asked - served == {"up"}, f"not served: {asked - served - {'up'}}"


def test_the_name_reader_finds_names_in_selectors_ranges_and_calls() -> None:
    expr = 'sum by (verb) (rate(a_total[5m])) / count(b{pod!=""}) + max(c)'
    assert metric_names(expr) == {"a_total", "b", "c"}
