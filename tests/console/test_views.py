"""The console's JSON views on the staged cluster (the simulated one plus a pending pod, an idle
allocated GPU and a pod named as markup), its headers, and what it refuses."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from benchmarks.console import PENDING, XSS_NAME, staged_cluster
from extender.http.advisor import Advisor
from extender.http.console import CSP
from extender.http.console.tiles import tile_state
from extender.model.readings import GpuReading
from extender.scoring import ScoringPolicy
from extender.sources.snapshot import load_snapshot
from gpu_advisor.app import create_app

NOW = 1_796_000_000.0


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    snap = load_snapshot(staged_cluster(tmp_path_factory.mktemp("console") / "cluster.json"), now=NOW)
    advisor = Advisor(snap.cluster("staged"), snap.telemetry(60), ScoringPolicy(), clock=lambda: NOW)
    advisor.pod_objects = lambda: snap.pods
    with TestClient(create_app(advisor), raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.mark.parametrize(
    ("allocated", "sm", "used", "stale", "state"),
    [
        (True, 92.0, 14000.0, False, "busy"),
        (True, 3.0, 9000.0, False, "allocated"),  # handed out, SMs idle: 3 % < 10 %
        (True, 10.0, 0.0, False, "busy"),  # 10 % is the line
        (False, 0.0, 62464.0, False, "memory-held"),  # free by count, 62464 / 81920 = 76 % of VRAM held
        (False, 0.0, 8000.0, False, "free"),  # 8000 / 81920 = 9.8 %, under the 10 % line
        (False, 0.0, 0.0, True, "unhealthy"),  # its exporter stopped
        (True, None, None, False, "allocated"),  # no reading: allocation alone
    ],
)
def test_a_tile_keeps_allocated_apart_from_used(
    allocated: bool, sm: float | None, used: float | None, stale: bool, state: str
) -> None:
    reading = GpuReading(sm_util=sm, memory_used_mib=used) if sm is not None else None
    assert tile_state(allocated, reading, stale, 81920.0) == state


def test_the_cluster_totals_separate_allocated_from_used(client: TestClient) -> None:
    doc = client.get("/v1/console/cluster").json()
    # 44 physical GPUs: 5 boards of 8 (the MI300X one too) and 4 time-sliced T4s (the MIG A100 reports no
    # topology). Allocated 16 = V100-a 4 + V100-b 3 + H100 2 + L40S 5 + MI300X 2; of those, GPU 6 of the L40S
    # idles at 3 % SM, so 15 are used; free 44 - 16 - 1 (the H100's GPU 3, memory held) = 27.
    assert doc["totals"] == {
        "gpus": 44,
        "allocated": 16,
        "used": 15,
        "allocated_idle": 1,
        "free": 27,
        "memory_held": 1,
        "unhealthy": 0,
    }
    sharing = {n["name"]: n["sharing"] for n in doc["nodes"]}
    assert sharing["t4-ts-a"] == "time-sliced ×4" and sharing["a100-mig-a"] == "MIG 7× 1g.5gb"
    assert doc["namespaces"] == ["media", "ml", "research", "serving", "web"]


def test_the_node_view_draws_nvlink_and_offers_best_sets(client: TestClient) -> None:
    view = client.get("/v1/console/nodes/hgx-h100-a").json()
    assert view["wiring"]["nvswitch"] is True  # every pair NV18: one hub, not 28 edges
    assert [g["gpus"] for g in view["wiring"]["numa"]] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    sets = {s["k"]: s for s in view["best_sets"]}
    assert sets[4]["gpus"] == [4, 5, 6, 7]
    assert sets[8]["problem"] == "asked for 8 GPUs but only 6 of 8 are free"
    dgx = client.get("/v1/console/nodes/dgx1-v100-a").json()
    assert dgx["wiring"]["nvswitch"] is False
    assert {"a": 0, "b": 3, "nvlinks": 2, "pcie": "NODE"} in dgx["wiring"]["links"]


def test_the_pod_view_shows_its_gpus_and_the_alternatives(client: TestClient) -> None:
    pod = client.get("/v1/console/pods/ml/train-llama").json()
    assert (pod["node"], pod["gpus"], pod["gpus_known_by"]) == ("dgx1-v100-a", [0, 1, 2, 3], "the node's only GPU pod")
    assert pod["here"]["fits"] and pod["ranked"][0]["score"] >= pod["ranked"][-1]["score"]
    assert {v["node"] for v in pod["ranked"]} | {v["node"] for v in pod["filtered"]} == {
        "a100-mig-a", "dgx1-v100-a", "dgx1-v100-b", "hgx-h100-a", "l40s-a", "t4-ts-a", "mi300x-a"
    }  # fmt: skip


def test_the_pod_view_carries_the_admission_findings_on_its_own_object(client: TestClient, advisor: Advisor) -> None:
    pod = client.get("/v1/console/pods/serving/tiny-llm").json()  # 2 GPUs of a time-sliced T4
    assert [(f["code"], f["severity"]) for f in pod["findings"]] == [("timeslice-multi-gpu", "warning")]
    with TestClient(create_app(advisor)) as unlisted:  # a source that lists no Pod objects: none to review
        assert unlisted.get("/v1/console/pods/ml/train-llama").json()["findings"] is None


def test_the_pending_view_diagnoses_in_order(client: TestClient) -> None:
    doc = client.get("/v1/console/pending").json()
    assert [p["pod"] for p in doc["pods"]] == [f"ml/{PENDING}"]
    found = doc["pods"][0]
    # 8 GPUs: only the time-sliced T4 has 8 replicas free (13/16), and the nodeSelector wants an H100
    assert [(s["step"], s["explains"]) for s in found["steps"]] == [
        ("allocation", False), ("memory", False), ("placement", True)
    ]  # fmt: skip
    assert found["steps"][2]["evidence"] == [
        "t4-ts-a: nodeSelector nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 does not match"
    ]
    assert len(found["node_reasons"]) == 7


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/v1/console/nodes/nowhere", 404),
        ("/v1/console/pods/ml/nobody", 404),
        ("/console/..%2Froutes.py", 404),
        ("/console/.hidden", 404),
        ("/console/nope.js", 404),
    ],
)
def test_unknown_names_are_404_with_a_message(client: TestClient, path: str, status: int) -> None:
    reply = client.get(path)
    assert reply.status_code == status and reply.json()["detail"]


@pytest.mark.parametrize("path", ["/", "/nodes/dgx1-v100-a", "/pods/web/x", "/pending", "/what-if", "/docs"])
def test_every_page_sends_a_strict_csp(client: TestClient, path: str) -> None:
    reply = client.get(path)
    assert reply.status_code == 200 and reply.headers["content-security-policy"] == CSP
    assert "'unsafe-inline'" not in CSP and reply.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    "path", ["/console/no-such.js", "/v1/console/nodes/no-such-node", "/v1/console/pods/web/no-such-pod"]
)
def test_a_console_404_sends_the_same_csp(client: TestClient, path: str) -> None:
    reply = client.get(path)
    assert reply.status_code == 404 and reply.headers["content-security-policy"] == CSP


def test_the_markup_named_pod_is_data_in_json(client: TestClient) -> None:
    card = next(n for n in client.get("/v1/console/cluster").json()["nodes"] if n["name"] == "l40s-a")
    assert {"key": f"web/{XSS_NAME}", "request": "1 GPU"} in card["pods"]


def test_the_assets_name_no_other_host() -> None:
    """Air-gapped: no asset loads anything from elsewhere (the SVG namespace is a name, not a fetch)."""
    static = Path(str(resources.files("extender.http.console").joinpath("static")))
    for asset in static.iterdir():
        urls = set(re.findall(r"https?://[^\s\"')]+", asset.read_text()))
        assert urls <= {"http://www.w3.org/2000/svg"}, asset.name


def test_the_pending_view_names_a_hold_and_until_when() -> None:
    from extender.scoring.hold_clock import until_text
    from extender.scoring.reserve import hold_reason
    from tests.api.test_hold_limit import T0, _held_advisor, waiting_pod

    now = [T0]
    advisor = _held_advisor(now)
    advisor.pod_objects = lambda: [waiting_pod("p", T0 - 60)]
    with TestClient(create_app(advisor)) as api:
        found = api.get("/v1/console/pending").json()["pods"][0]
        hold = next(s for s in found["steps"] if s["step"] == "hold")
        assert hold == {
            "step": "hold",
            "explains": False,  # a 500-milli gap on half takes it without opening an idle GPU
            "finding": "held off idle for whole-GPU pods; it fits on half",
            "evidence": [f"idle: {hold_reason(400)}"],
        }
        idle = next(v for v in found["node_reasons"] if v["node"] == "idle")
        assert (idle["fits"], idle["reason"], idle["held_until"]) == (False, hold_reason(400), until_text(T0 + 240))
        now[0] = T0 + 240  # past its limit: the console places it as the filter does
        found = api.get("/v1/console/pending").json()["pods"][0]
        assert next(s for s in found["steps"] if s["step"] == "hold")["explains"] is False
        assert next(v for v in found["node_reasons"] if v["node"] == "idle")["fits"] is True
