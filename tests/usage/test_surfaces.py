"""Where people see the usage report: ``gpu-advisor usage`` (table, CSV, JSON, errors), ``GET /v1/usage``
with its per-tenant gauges, and ``serve``'s wiring — on the simulated cluster's synthetic history."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.advice.rightsize import Owner
from extender.advice.usage import PodUsage, UsageSource, gpu_ask
from extender.cluster.state import ClusterState
from extender.http.advisor import Advisor
from extender.http.usage import MAX_TENANTS
from extender.sources.simulated_usage import simulated_usage
from extender.sources.snapshot import simulated_cluster
from gpu_advisor.app import create_app
from gpu_advisor.cli import main
from gpu_advisor.history_sources import usage_source
from tests.conftest import NOW


@pytest.fixture
def served(advisor: Advisor) -> Iterator[TestClient]:
    snap = simulated_cluster(now=NOW)
    advisor.usage = UsageSource(lambda end, window: simulated_usage(snap, end, window), "synthetic")
    with TestClient(create_app(advisor), raise_server_exceptions=False) as client:
        yield client


def test_the_cli_prints_the_simulated_tenants_most_allocated_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["usage", "--cluster", "simulated", "--window", "7d"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["TENANT", "PODS"]
    # ml: train-llama 4 GPUs × 168 h + finetune 2 × 168 h = 1008 GPU-hours, all whole GPUs.
    assert lines[1].split()[:3] == ["ml", "2", "1008.0"]
    # serving: serve-70b 2 × 168 = 336; mig-inference 2 × 1g.5gb (1/7) × 30 h = 8.57;
    # tiny-llm 2 of 4 T4 shares × 168 h = 84, embedder 1 share × 168 h = 42: 126 time-sliced;
    # rocm-serve 2 MI300X × 168 h = 336 whole: 336 + 336 + 8.57 + 126 = 806.6.
    serving = next(line.split() for line in lines if line.startswith("serving"))
    assert serving[:3] == ["serving", "5", "806.6"] and serving[5:8] == ["672.0", "8.6", "126.0"]


def test_csv_has_one_row_per_tenant(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["usage", "--cluster", "simulated", "--window", "7d", "--by", "workload", "--csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].startswith("tenant,pods,allocated_gpu_hours,used_gpu_hours,idle_gpu_hours")
    assert len(rows) == 1 + 10  # the simulated cluster's 10 GPU pods, each its own workload
    assert "serving/Pod/mig-inference,1,8.571," in "\n".join(rows)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--by", "team"], "give namespace, workload or label:KEY"),
        (["--window", "soon"], "window 'soon' is not a duration"),
        (["--cluster", "kube"], "give --prometheus URL"),
        (["--prometheus", "not a url"], "is not a URL"),
        (["--prometheus", "http://127.0.0.1:9"], "no history from http://127.0.0.1:9"),
    ],
)
def test_bad_input_gets_one_line_and_a_nonzero_exit(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(["usage", *argv])
    except SystemExit as exc:  # argparse's own refusals
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code in (2, 3) and message in err and "Traceback" not in err


def test_the_api_answers_by_label_and_exports_the_tenants(served: TestClient) -> None:
    reply = served.get("/v1/usage", params={"by": "namespace", "window": "7d"})
    assert reply.status_code == 200, reply.text
    doc = reply.json()
    assert [t["tenant"] for t in doc["tenants"]] == ["ml", "serving", "media", "research"]
    assert doc["tenants"][0]["allocated_gpu_hours"] == 1008
    metrics = served.get("/metrics").text
    assert 'gpu_advisor_usage_gpu_hours{by="namespace",kind="allocated",tenant="ml"} 1008.0' in metrics


@pytest.mark.parametrize(("params", "detail"), [({"window": "7x"}, "is not a duration"), ({"by": "x"}, "label:KEY")])
def test_the_api_refuses_bad_parameters_with_400(served: TestClient, params: dict[str, str], detail: str) -> None:
    reply = served.get("/v1/usage", params=params)
    assert reply.status_code == 400 and detail in reply.json()["detail"]


def test_a_bad_by_names_the_query_parameter_not_the_cli_flag(served: TestClient) -> None:
    detail = served.get("/v1/usage", params={"by": "team"}).json()["detail"]
    assert detail.startswith("query parameter by: 'team' is not a tenant") and "--by" not in detail


def test_an_empty_by_is_the_default_namespace(served: TestClient) -> None:
    reply = served.get("/v1/usage?by=&window=30d")
    assert reply.status_code == 200, reply.text
    assert reply.json() == served.get("/v1/usage", params={"window": "30d"}).json()


def test_the_gauges_keep_the_most_allocated_tenants_and_sum_the_rest(advisor: Advisor) -> None:
    ask = gpu_ask("nvidia.com/gpu", 1)
    assert ask is not None
    # 25 namespaces; ns-k holds 1 GPU for k + 1 hours: the 20 largest are ns-24 … ns-5, the other
    # 5 (ns-0 … ns-4) hold 1 + 2 + 3 + 4 + 5 = 15 GPU-hours together.
    pods = [PodUsage(f"ns-{k}", "p", Owner(f"ns-{k}", "Pod", "p"), (ask,), k + 1.0) for k in range(25)]
    advisor.usage = UsageSource(lambda end, window: pods, "test")
    with TestClient(create_app(advisor), raise_server_exceptions=False) as client:
        assert client.get("/v1/usage").status_code == 200
        lines = [line for line in client.get("/metrics").text.splitlines() if 'kind="allocated"' in line]
    assert len(lines) == MAX_TENANTS + 1 == 21
    assert 'gpu_advisor_usage_gpu_hours{by="namespace",kind="allocated",tenant="(other)"} 15.0' in lines


def test_the_api_says_404_without_history_and_503_when_prometheus_fails(api: TestClient, advisor: Advisor) -> None:
    reply = api.get("/v1/usage")
    assert reply.status_code == 404 and "--prometheus" in reply.json()["detail"]

    def down(end: float, window: float) -> list[Any]:
        raise OSError("connection refused")

    advisor.usage = UsageSource(down, "http://127.0.0.1:9")
    reply = api.get("/v1/usage")
    assert reply.status_code == 503 and "connection refused" in reply.json()["detail"]


def test_serve_offers_prometheus_usage_or_the_simulated_one_and_none_else() -> None:
    state = ClusterState("simulated")
    assert usage_source("kube", None, state, []) is None
    simulated = usage_source("simulated", None, state, [])
    assert simulated is not None and len(simulated.read(NOW, 7 * 86400)) == 10
    live = usage_source("kube", "http://127.0.0.1:9/", state, [])
    assert live is not None and live.name == "http://127.0.0.1:9"
    with pytest.raises(OSError):
        live.read(NOW, 3600)
