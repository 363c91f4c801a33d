"""Shared GPUs live, in all three conventions: filter refuses with the share named, prioritize ranks by
what a placement strands, dry-run says which GPU the pod would share, admission warns and denies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.advice.replay.advisor_policy import replay_node_object
from extender.cluster.state import ClusterState, bound_pod, node_state
from extender.http.advisor import Advisor
from extender.scoring import ScoringPolicy
from gpu_advisor.app import create_app
from tests.webhook.test_admission_api import review

MILLI, COUNT, MODEL, INDEX = (
    "alibabacloud.com/gpu-milli", "alibabacloud.com/gpu-count", "alibabacloud.com/gpu-card-model",
    "alibabacloud.com/gpu-index",
)  # fmt: skip


def alibaba_pod(
    name: str, milli: Any, count: Any = 1, model: str | None = None, gpu: int | None = None
) -> dict[str, Any]:
    notes = {MILLI: str(milli), COUNT: str(count)} | ({MODEL: model} if model else {})
    notes |= {INDEX: str(gpu)} if gpu is not None else {}
    container = {"name": "c", "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "annotations": notes},
        "spec": {"containers": [container]},
    }


def hami_node(name: str) -> dict[str, Any]:
    devices = [
        {
            "id": f"GPU-{i}",
            "index": i,
            "count": 10,
            "devmem": 16384,
            "devcore": 100,
            "type": "NVIDIA-T4",
            "health": True,
        }
        for i in range(2)
    ]
    return {
        "kind": "Node",
        "metadata": {"name": name, "annotations": {"hami.io/node-nvidia-register": json.dumps(devices)}},
        "status": {"capacity": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "20"}},
    }


def aliyun_node(name: str) -> dict[str, Any]:
    capacity = {"cpu": "32", "memory": "128Gi", "aliyun.com/gpu-mem": "30", "aliyun.com/gpu-count": "2"}
    return {"kind": "Node", "metadata": {"name": name}, "status": {"capacity": capacity}}


def bound(pod: dict[str, Any], node: str) -> Any:
    found = bound_pod(pod | {"spec": {**pod["spec"], "nodeName": node}})
    assert found is not None
    return found[1]


@pytest.fixture
def cluster() -> ClusterState:
    """g2: 8 G2 GPUs, GPU 0 at 300 free (700 bound with its index), GPU 1 at 500 free; t4: 2 idle T4s."""
    state = ClusterState("shared")
    g2 = replay_node_object("g2", "G2", 96_000, 786_432, 8)
    pods = [bound(alibaba_pod("a", 700, gpu=0), "g2"), bound(alibaba_pod("b", 500, gpu=1), "g2")]
    state.replace_all(
        [
            node_state(g2, pods, state.machines),
            node_state(replay_node_object("t4", "T4", 64_000, 262_144, 2), (), state.machines),
            node_state(hami_node("hami"), (), state.machines),
            node_state(aliyun_node("aliyun"), (), state.machines),
        ]
    )
    return state


@pytest.fixture
def client(cluster: ClusterState) -> Iterator[TestClient]:
    """The filter as ``--filter-passes fitting`` serves it: every node's verdict on the wire."""
    advisor = Advisor(cluster, None, ScoringPolicy(), clock=lambda: 0.0, filter_passes="fitting")
    with TestClient(create_app(advisor)) as c:
        yield c


def _filter(client: TestClient, pod: dict[str, Any], names: list[str]) -> dict[str, Any]:
    reply = client.post("/scheduler/filter", json={"Pod": pod, "NodeNames": names})
    assert reply.status_code == 200
    out: dict[str, Any] = reply.json()
    return out


def test_the_cluster_model_keeps_the_free_share_of_every_gpu(cluster: ClusterState) -> None:
    g2 = cluster.node("g2")
    assert g2 is not None and g2.shares is not None
    assert g2.shares.free == (300, 500, 1000, 1000, 1000, 1000, 1000, 1000)
    assert (g2.gpu_model, g2.cpu_free, g2.memory_free) == ("G2", 96_000 - 2 * 2000, 786_432 - 2 * 4096)
    hami, aliyun = cluster.node("hami"), cluster.node("aliyun")
    assert hami is not None and hami.shares is not None and hami.shares.memory_mib == (16384, 16384)
    assert aliyun is not None and aliyun.shares is not None and aliyun.shares.memory_mib == (15360, 15360)


def test_filter_refuses_nodes_where_no_gpu_has_the_share_and_names_the_field(client: TestClient) -> None:
    reply = _filter(client, alibaba_pod("p", 600), ["g2", "t4"])
    assert reply["NodeNames"] == ["g2", "t4"]  # g2 still has idle GPUs
    models = _filter(client, alibaba_pod("p", 600, model="V100M16|A10"), ["g2", "t4"])
    assert models["NodeNames"] == []
    assert models["FailedAndUnresolvableNodes"]["t4"] == (
        f'GPU model T4 is not allowed: metadata.annotations["{MILLI}"] asks V100M16|A10'
    )


def test_a_full_node_is_refused_with_the_free_milli_of_each_gpu(client: TestClient, cluster: ClusterState) -> None:
    g2 = replay_node_object("full", "G2", 96_000, 786_432, 2)
    cluster.put(
        node_state(g2, [bound(alibaba_pod("x", 800, gpu=0), "full"), bound(alibaba_pod("y", 1000, gpu=1), "full")])
    )
    reply = _filter(client, alibaba_pod("p", 500), ["full"])
    assert reply["FailedNodes"]["full"] == (
        f'no room for a GPU with 500 milli (metadata.annotations["{MILLI}"]): '
        "milli free per GPU 200,0 (most on GPU 0: 200)"
    )


@pytest.mark.parametrize(
    ("pod", "field"),
    [
        (alibaba_pod("p", 1200), f'metadata.annotations["{MILLI}"]: 1200 is over 1000'),
        (alibaba_pod("p", -5), f"metadata.annotations[\"{MILLI}\"]: '-5' is negative"),
        (alibaba_pod("p", "half"), f"metadata.annotations[\"{MILLI}\"]: 'half' is not a number"),
        (alibaba_pod("p", 500, 0), f'metadata.annotations["{COUNT}"]: a count of 0 with a share of 500 milli'),
    ],
)
def test_a_malformed_share_fails_every_node_naming_the_field_never_an_error(
    client: TestClient, pod: dict[str, Any], field: str
) -> None:
    reply = _filter(client, pod, ["g2", "t4"])
    assert reply["Error"] == "" and reply["NodeNames"] == []
    assert set(reply["FailedAndUnresolvableNodes"]) == {"g2", "t4"}
    assert reply["FailedAndUnresolvableNodes"]["g2"].startswith(f"cannot read the pod's GPU share: {field}")
    scores = client.post("/scheduler/prioritize", json={"Pod": pod, "NodeNames": ["g2", "t4"]}).json()
    assert scores == [{"Host": "g2", "Score": 0}, {"Host": "t4", "Score": 0}]


def test_hami_and_aliyun_shares_are_measured_against_each_gpus_memory(client: TestClient) -> None:
    hami = {
        "kind": "Pod",
        "metadata": {"name": "h", "namespace": "ml"},
        "spec": {
            "containers": [
                {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "20000"}}}
            ]
        },
    }
    reply = _filter(client, hami, ["hami"])
    assert reply["FailedAndUnresolvableNodes"]["hami"].startswith(
        "1× 20000 MiB GPU share (spec.containers[0].resources.limits"
    )
    assert reply["FailedAndUnresolvableNodes"]["hami"].endswith("is more than one of its GPUs (16384 MiB)")
    aliyun = {
        "kind": "Pod",
        "metadata": {"name": "a", "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"aliyun.com/gpu-mem": "6"}}}]},
    }
    assert _filter(client, aliyun, ["aliyun", "hami", "g2"])["NodeNames"] == ["aliyun"]


def test_prioritize_prefers_the_placement_that_strands_least_and_keeps_the_argmax(client: TestClient) -> None:
    for n in range(6):  # the mix the advisor learns: mostly 500-milli pods, some whole GPUs
        _filter(client, alibaba_pod(f"seen-{n}", 500 if n % 3 else 1000), ["g2"])
    scores = client.post("/scheduler/prioritize", json={"Pod": alibaba_pod("p", 500), "NodeNames": ["g2", "t4"]}).json()
    by_host = {s["Host"]: s["Score"] for s in scores}
    # On g2 the 500 fills GPU 1 exactly (nothing stranded); on t4 it would halve an idle GPU.
    assert by_host["g2"] > by_host["t4"]


def test_dry_run_shows_which_gpu_the_pod_would_share_and_what_stays_free(client: TestClient) -> None:
    reply = client.post("/v1/dry-run", json=alibaba_pod("p", 200) | {"apiVersion": "v1"})
    assert reply.status_code == 200
    best = next(r for r in reply.json()["ranked"] if r["node"] == "g2")
    assert best["gpus"] == [0]
    assert best["reason"].startswith(
        "shares GPU 0: 200 of its 300 free milli, 100 stays free; milli free per GPU after:"
    )


def test_dry_run_answers_a_malformed_share_with_a_4xx_naming_the_field(client: TestClient) -> None:
    reply = client.post("/v1/dry-run", json=alibaba_pod("p", 1500) | {"apiVersion": "v1"})
    assert reply.status_code == 422 and f'metadata.annotations["{MILLI}"]: 1500 is over 1000' in reply.json()["detail"]


def test_admission_warns_when_a_share_fits_no_gpu_model_in_the_cluster(client: TestClient) -> None:
    reply = client.post("/admission/validate", json=review(alibaba_pod("p", 300, model="A100"))).json()["response"]
    assert reply["allowed"] is True
    assert any("fits no GPU here: G2, T4" in w for w in reply["warnings"]), reply["warnings"]
    fine = client.post("/admission/validate", json=review(alibaba_pod("p", 300, model="T4"))).json()["response"]
    assert not any("fits no GPU" in w for w in fine.get("warnings", []))


def test_admission_denies_a_malformed_share_under_enforce_with_the_requests_uid(client: TestClient) -> None:
    doc = review(alibaba_pod("p", "lots"))
    reply = client.post("/admission/validate/enforce", json=doc).json()["response"]
    assert reply["uid"] == doc["request"]["uid"] and reply["allowed"] is False
    assert f'invalid-gpu-request: metadata.annotations["{MILLI}"]' in reply["status"]["message"]
