"""Where people see the advice: ``gpu-advisor rightsize`` (table, JSON, errors), ``GET /v1/rightsize``
with its metrics, ``serve``'s wiring, and the ``--annotate`` patches — on the simulated cluster's
synthetic history."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.advice.rightsize import HistorySource, Owner, rightsize
from extender.http.advisor import Advisor
from extender.sources.rightsize_annotation import ANNOTATION_RIGHTSIZE, annotate_owners
from extender.sources.simulated_history import simulated_history
from extender.sources.snapshot import simulated_cluster
from gpu_advisor.app import create_app
from gpu_advisor.cli import main
from gpu_advisor.history_sources import history_source
from tests.conftest import NOW


@pytest.fixture
def served(advisor: Advisor) -> Iterator[TestClient]:
    snap = simulated_cluster(now=NOW)
    advisor.rightsize = HistorySource(lambda end, _: simulated_history(snap, end), lambda: snap.pods, "synthetic")
    with TestClient(create_app(advisor), raise_server_exceptions=False) as client:
        yield client


def test_the_cli_prints_the_simulated_clusters_table_most_idle_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rightsize", "--cluster", "simulated"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["WORKLOAD", "GPUS", "USED"]
    # tiny-llm: 2 GPUs × 168 h × (1 − 4 % mean SM) = 322.56 idle GPU-hours, the most
    assert lines[1].split()[:2] == ["serving/Pod/tiny-llm", "2.0"] and "322.6" in lines[1]
    notebook = next(line for line in lines if "notebook-1" in line)
    assert "idle: scale to zero or delete" in notebook
    assert lines[-1].startswith("9 workloads over 168 h (synthetic history of the simulated cluster)")


def test_the_cli_json_filters_by_namespace_and_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rightsize", "--cluster", "simulated", "-n", "serving", "--min-gpus", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    names = [w["workload"]["name"] for w in doc["workloads"]]
    assert sorted(names) == ["mig-inference", "serve-70b", "tiny-llm"]  # embedder holds 1
    embedder_left_out = main(["rightsize", "--cluster", "simulated", "-n", "serving", "--window", "1d", "--json"])
    assert embedder_left_out == 0 and json.loads(capsys.readouterr().out)["window_hours"] == 24


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--window", "soon"], "window 'soon' is not a duration"),
        (["--window", "100d"], "at most 90d"),
        (["--cluster", "simulated", "--annotate"], "--annotate writes to the live cluster"),
        (["--prometheus", "not a url"], "is not a URL"),
        (["--cluster", "simulated", "--prometheus", "http://127.0.0.1:9"], "no history from http://127.0.0.1:9"),
    ],
)
def test_bad_input_gets_one_line_and_a_nonzero_exit(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) if "--window" in argv else _no_raise():
        code = main(["rightsize", *argv])
        assert code in (2, 3)
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_snapshot_without_prometheus_is_told_to_give_one(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    snap = tmp_path / "c.yaml"
    snap.write_text("nodes: [{name: a, machine: dgx1-v100}]\npods: []\n")
    assert main(["rightsize", "--cluster", str(snap)]) == 2
    assert "give --prometheus URL" in capsys.readouterr().err


class _no_raise:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


def test_the_api_answers_the_report_and_exports_its_totals(served: TestClient) -> None:
    reply = served.get("/v1/rightsize", params={"namespace": "ml"})
    assert reply.status_code == 200, reply.text
    doc = reply.json()
    assert [w["workload"]["name"] for w in doc["workloads"]] == ["finetune", "train-llama"]
    # finetune: 2 × 168 h × 78 % idle = 262.08; train-llama: 4 × 168 h × 10 % = 67.2
    assert doc["totals"]["gpu_hours_idle"] == pytest.approx(329.28)
    assert doc["workloads"][0]["recommendation"]["summary"] == "2 → 1 GPU"
    metrics = served.get("/metrics").text
    assert "gpu_advisor_rightsize_gpu_hours_idle 329.28" in metrics
    assert "gpu_advisor_rightsize_workloads 2.0" in metrics


@pytest.mark.parametrize(
    ("params", "detail"),
    [({"window": "7x"}, "is not a duration"), ({"min_gpus": "-1"}, "min_gpus '-1'"), ({"min_gpus": "x"}, "min_gpus")],
)
def test_the_api_refuses_bad_parameters_with_400(served: TestClient, params: dict[str, str], detail: str) -> None:
    reply = served.get("/v1/rightsize", params=params)
    assert reply.status_code == 400 and detail in reply.json()["detail"]


def test_empty_query_parameters_are_parameters_not_given(served: TestClient) -> None:
    # namespace= is every namespace (not the one named ""), min_gpus= the default 0.
    everything = served.get("/v1/rightsize", params={"window": "7d"}).json()
    reply = served.get("/v1/rightsize?namespace=&window=7d&min_gpus=")
    assert reply.status_code == 200, reply.text
    assert reply.json() == everything and len(everything["workloads"]) == 9  # ml alone has 2


def test_the_api_says_404_without_history_and_503_when_prometheus_fails(api: TestClient, advisor: Advisor) -> None:
    reply = api.get("/v1/rightsize")
    assert reply.status_code == 404 and "--prometheus" in reply.json()["detail"]

    def down(end: float, window: float) -> list[Any]:
        raise OSError("connection refused")

    advisor.rightsize = HistorySource(down, list, "prometheus http://127.0.0.1:9")
    reply = api.get("/v1/rightsize")
    assert reply.status_code == 503 and "connection refused" in reply.json()["detail"]


def test_serve_offers_prometheus_history_or_the_simulated_one_and_none_else() -> None:
    snap = simulated_cluster(now=NOW)
    state = snap.cluster("simulated")
    assert history_source("kube", None, state, []) is None
    simulated = history_source("simulated", None, state, snap.pods)
    assert simulated is not None and len(simulated.read(NOW, 7 * 86400)) == 18  # GPUs of the 9 pods
    live = history_source("kube", "http://127.0.0.1:9/", state, snap.pods)
    assert live is not None and live.name == "http://127.0.0.1:9" and list(live.pods()) == snap.pods
    with pytest.raises(OSError):
        live.read(NOW, 3600)


class _FakeApi:
    """Records the merge patches of the kubernetes client's patch methods."""

    def __init__(self) -> None:
        self.patches: list[tuple[str, str, str, dict[str, Any]]] = []
        self.api_client = self

    def patch_namespaced_pod(self, name: str, namespace: str, body: dict[str, Any]) -> None:
        if name == "forbidden":
            raise RuntimeError("pods 'forbidden' is forbidden")
        self.patches.append(("Pod", namespace, name, body))


def test_annotate_patches_each_owner_and_reports_those_it_could_not() -> None:
    snap = simulated_cluster(now=NOW)
    series = simulated_history(snap, NOW)

    def owner(pod: str) -> Owner:
        namespace, _, name = pod.partition("/")
        return Owner(namespace, "Pod" if name != "embedder" else "Rollout", "forbidden" if name == "finetune" else name)

    report = rightsize(series, owner, 168, "synthetic")
    fake = _FakeApi()
    failed = annotate_owners(fake, report.advice)
    assert sorted((o.name, why) for o, why in failed) == [
        ("embedder", "no patch for kind Rollout"),
        ("forbidden", "pods 'forbidden' is forbidden"),
    ]
    assert len(fake.patches) == 7
    notebook = next(p for p in fake.patches if p[2] == "notebook-1")
    value = json.loads(notebook[3]["metadata"]["annotations"][ANNOTATION_RIGHTSIZE])
    assert value["advice"] == "idle: scale to zero or delete" and value["gpus_freed"] == 1
    assert value["gpu_hours_idle"] == 119.9  # 120 h × (1 − 0.1 %) = 119.88
