"""/v1/nodes carries each GPU's live values: SM %, VRAM used/total, age and the pod holding it."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_the_simulated_cluster_shows_its_synthetic_readings_per_gpu(api: TestClient) -> None:
    detail = api.get("/v1/nodes/hgx-h100-a").json()
    live = {g["gpu"]: g for g in detail["gpus_live"]}
    assert sorted(live) == list(range(8))
    # GPU 0: 97 % SM, 70,000 of 81,559 MiB. Which of serve-70b's GPUs it is, only an exporter's pod
    # labels would say: the agent's report names the free GPUs, not who holds the others.
    assert (live[0]["sm_pct"], live[0]["vram_used_mib"], live[0]["vram_total_mib"]) == (97, 70000, 81559)
    assert live[0]["pod"] is None and live[0]["stale"] is False
    # GPU 3: free by allocation, 61 GiB held by nobody the model knows
    assert (live[3]["sm_pct"], live[3]["vram_used_mib"], live[3]["pod"]) == (0, 62464, None)
    assert live[3]["age_s"] is None, "synthetic values do not age"


def test_the_node_list_carries_the_same_per_gpu_values(api: TestClient) -> None:
    nodes = {n["name"]: n for n in api.get("/v1/nodes").json()}
    assert [g["sm_pct"] for g in nodes["dgx1-v100-a"]["gpus_live"]] == [92, 92, 92, 92, 0, 0, 0, 0]
    assert nodes["t4-ts-a"]["gpus_live"] == [], "no telemetry given for it"


def test_telemetry_route_and_metrics_describe_a_static_board(api: TestClient) -> None:
    report = api.get("/v1/telemetry").json()
    assert report["source"] == "static" and report["series"]["matched"] is None
    coverage = {n["name"]: (n["gpus"], n["gpus_read"]) for n in report["nodes"]}
    assert coverage["hgx-h100-a"] == (8, 8) and coverage["t4-ts-a"] == (4, 0)
    metrics = api.get("/metrics").text
    assert "gpu_advisor_telemetry_source_up 1.0" in metrics
    assert "gpu_advisor_telemetry_poll_errors_total 0.0" in metrics
