"""POST /v1/dry-run and GET /v1/nodes: the same answers as the extender, readable errors."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from extender.http.advisor import Advisor

SIMULATED = ["a100-mig-a", "dgx1-v100-a", "dgx1-v100-b", "hgx-h100-a", "l40s-a", "mi300x-a", "t4-ts-a"]


def pod(limits: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"limits": limits}}], **spec},
    }


PODS = {
    "1-gpu": pod({"nvidia.com/gpu": "1"}),
    "2-gpu": pod({"nvidia.com/gpu": "2"}),
    "4-gpu": pod({"nvidia.com/gpu": "4"}),
    "8-gpu": pod({"nvidia.com/gpu": "8"}),
    "mig": pod({"nvidia.com/mig-1g.5gb": "1"}),
    "h100-only": pod({"nvidia.com/gpu": "2"}, nodeSelector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}),
}


@pytest.mark.parametrize("name", list(PODS))
def test_the_dry_run_ranking_is_what_filter_and_prioritize_answer(
    fitting_api: TestClient, advisor: Advisor, name: str
) -> None:
    """Against the filter that passes every fitting node; the default filter passes the dry run's first."""
    api = fitting_api
    manifest = PODS[name]
    answer = api.post("/v1/dry-run", json=manifest).json()
    eligible = sorted(
        [f["node"] for f in answer["filtered"] if f["stage"] != "eligibility"] + [r["node"] for r in answer["ranked"]]
    )
    body = {"Pod": manifest, "NodeNames": eligible}
    passed = api.post("/scheduler/filter", json=body).json()["NodeNames"]
    scores = {h["Host"]: h["Score"] for h in api.post("/scheduler/prioritize", json=body).json()}
    assert sorted(r["node"] for r in answer["ranked"]) == sorted(passed)
    assert {r["node"]: r["score"] for r in answer["ranked"]} == {n: scores[n] for n in passed}
    ranked_scores = [r["score"] for r in answer["ranked"]]
    assert ranked_scores == sorted(ranked_scores, reverse=True)
    advisor.filter_passes = "best"
    best = api.post("/scheduler/filter", json=body).json()["NodeNames"]
    assert best == [r["node"] for r in answer["ranked"][:1]]


def test_a_4_gpu_job_in_yaml_names_the_best_node_and_its_nvlink_quad(api: TestClient) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {"template": {"spec": PODS["4-gpu"]["spec"]}},
    }
    reply = api.post("/v1/dry-run", content=yaml.safe_dump(job), headers={"Content-Type": "application/yaml"})
    answer = reply.json()
    assert reply.status_code == 200 and answer["schedulable"] is True
    assert answer["verdict"] == "schedulable on 5 nodes; best: dgx1-v100-a with NVLink quad 4-5-6-7"
    assert answer["ranked"][0]["gpus"] == [4, 5, 6, 7]
    mig = {"node": "a100-mig-a", "stage": "gpu", "reason": "has no nvidia.com/gpu", "unresolvable": True}
    assert mig | {"held_until": None} in answer["filtered"]
    assert answer["findings"][0]["code"] == "timeslice-multi-gpu"


def test_the_readme_finetune_pod_goes_to_a_node_whose_set_holds_no_memory_held_gpu(api: TestClient) -> None:
    # hgx-h100-a would hand out pair 2-3 (NVIDIA's allocator keeps the quad 4-7 whole), but its GPU 3
    # holds 61 GiB for something no pod accounts for: it ranks below every clean set, so the NVLink
    # pair 4-7 on dgx1-v100-a is best, and the answer on the wire is the same.
    finetune = {
        "kind": "Pod",
        "metadata": {"name": "finetune", "namespace": "ml"},
        "spec": {"containers": [{"name": "trainer", "resources": {"limits": {"nvidia.com/gpu": 2}}}]},
    }
    answer = api.post("/v1/dry-run", json=finetune).json()
    assert answer["verdict"] == "schedulable on 5 nodes; best: dgx1-v100-a with NVLink pair 4-7"
    ranked = {r["node"]: r for r in answer["ranked"]}
    assert answer["ranked"][0]["node"] == "dgx1-v100-a" and ranked["dgx1-v100-a"]["score"] == 9
    h100 = ranked["hgx-h100-a"]
    assert h100["gpus"] == [2, 3] and h100["score"] == 8  # 9 before the rank, one below the best on the wire
    assert "GPU 3 is idle but memory held (61 GiB, SM 0%) by something we don't know about" in h100["reason"]
    assert h100["reason"].endswith(
        "ranked below every node whose set holds no memory-held GPU (NVIDIA's device plugin picks the set"
        " by its own best-effort policy: the advisor predicts it, cannot steer it)"
    )


def test_an_unschedulable_pod_says_why_and_selector_rejections_are_named(api: TestClient) -> None:
    answer = api.post(
        "/v1/dry-run", json=pod({"nvidia.com/gpu": "16"}, nodeSelector={"nvidia.com/gpu.product": "NVIDIA-L40S"})
    ).json()
    assert answer["schedulable"] is False
    assert answer["verdict"] == "unschedulable: l40s-a: has 8 GPUs in all, pod needs 16"
    reasons = {f["node"]: f["reason"] for f in answer["filtered"]}
    assert reasons["dgx1-v100-a"] == "nodeSelector nvidia.com/gpu.product=NVIDIA-L40S does not match"
    assert answer["findings"][0]["code"] == "exceeds-largest-node"


def test_a_snapshot_in_the_body_replaces_the_live_state(api: TestClient) -> None:
    snapshot = {"nodes": [{"name": "what-if", "machine": "gke-a4-b200"}]}
    answer = api.post("/v1/dry-run", json={"manifest": PODS["8-gpu"], "snapshot": snapshot}).json()
    assert [r["node"] for r in answer["ranked"]] == ["what-if"] and answer["ranked"][0]["gpus"] == list(range(8))


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"kind: Pod\nspec:\n  containers: [unclosed\n", 400, "line 4, column 1"),
        (b'{"kind": "Pod", "spec": ', 400, "not valid JSON or YAML: line 1"),
        (b"", 400, "empty body"),
        (b"just a string", 422, "needs a 'kind'"),
        (b"kind: ConfigMap\ndata: {}\n", 422, "kind 'ConfigMap' has no pod template"),
        (
            b'{"kind": "Pod", "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "two"}}}]}}',
            422,
            "is not a number",
        ),
        (
            b'{"manifest": {"kind": "Pod", "spec": {}}, "snapshot": {"nodes": "x"}}',
            422,
            "snapshot: a snapshot needs a list 'nodes'",
        ),
    ],
    ids=["yaml-broken", "json-broken", "empty", "scalar", "no-template", "bad-quantity", "bad-snapshot"],
)
def test_malformed_manifests_get_400_or_422_with_the_line(
    api: TestClient, body: bytes, status: int, message: str
) -> None:
    reply = api.post("/v1/dry-run", content=body, headers={"Content-Type": "application/yaml"})
    assert reply.status_code == status and message in reply.json()["detail"]


def test_nodes_lists_gpus_topology_free_set_and_telemetry_age(api: TestClient) -> None:
    nodes = api.get("/v1/nodes").json()
    assert [n["name"] for n in nodes] == SIMULATED
    dgx = next(n for n in nodes if n["name"] == "dgx1-v100-b")
    assert (dgx["gpus"], dgx["gpus_free"], dgx["free_gpus"]) == (8, 5, [0, 2, 4, 5, 6])
    assert dgx["nvlink_islands"] == [list(range(8))] and dgx["numa_groups"] == {"0": [0, 1, 2, 3], "1": [4, 5, 6, 7]}
    detail = api.get("/v1/nodes/hgx-h100-a").json()
    assert detail["topology"]["version"] == 1 and len(detail["topology"]["links"]) == 28
    missing = api.get("/v1/nodes/nope")
    assert missing.status_code == 404 and "no node 'nope'" in missing.json()["detail"]


def test_the_dry_run_is_documented_in_openapi(api: TestClient) -> None:
    spec = api.get("/openapi.json").json()
    post = spec["paths"]["/v1/dry-run"]["post"]
    assert set(post["requestBody"]["content"]) == {"application/json", "application/yaml"}
    assert post["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("DryRunAnswer")
    assert "/v1/nodes/{name}" in spec["paths"]
