"""Every admission rule, reached through the real AdmissionReview endpoint with a pod it speaks about, then
fed each field of that pod replaced by a hostile value: an object where a number goes, ``"high"`` as a
priority, infinity and NaN, numbers of 400 digits, lists, null, digits Python reads but int() refuses.

Whatever the field, the answer is a 200 AdmissionReview echoing the uid and the log holds no traceback;
a field a rule reads that is of the wrong type is one ``invalid-gpu-request`` warning naming it."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.http.advisor import Advisor
from extender.scoring import ScoringPolicy
from extender.sources.snapshot import parse_snapshot, simulated_cluster
from gpu_advisor.app import create_app
from tests.conftest import NOW
from tests.hostile.test_mutations import paths, replaced
from webhook.rules import RULES

HOSTILE: list[Any] = [
    "high",
    "",
    {},
    {"a": {"b": 1}},
    [],
    [1, "x"],
    None,
    True,
    -1,
    1e308,
    float("inf"),
    float("nan"),
    10**400,
    "inf",
    "nan",
    "1e400",
    "9" * 400,
    "²",  # "²".isdigit() is True; int("²") raises
    "llama-" + "9" * 400 + "b",  # a model "size" float() reads as inf
]

T4 = {"nvidia.com/gpu.product": "Tesla-T4"}
H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
L40S = {"nvidia.com/gpu.product": "NVIDIA-L40S"}
A100_40 = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.memory": "40960"}
MPS = {**A100_40, "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "mps"}


def pod(
    limits: dict[str, str],
    selector: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **container: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "busybox", "resources": {"limits": limits}, **container}],
        "schedulerName": "gpu-advisor",
    }
    if selector:
        spec["nodeSelector"] = selector
    meta = {"name": "p", "namespace": "ml", "annotations": annotations or {}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def vllm(model: str, *flags: str) -> dict[str, Any]:
    return {"image": "vllm/vllm-openai", "command": ["vllm", "serve", model], "args": list(flags)}


GPUS = "nvidia.com/gpu"
# One pod per rule, on a cluster where that rule speaks: (cluster, the rule's code, the pod).
BASES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "exceeds_largest_node": ("simulated", "exceeds-largest-node", pod({GPUS: "16"}, H100)),
    "gpu_share_never_fits": (
        "simulated",
        "gpu-share-never-fits",
        pod({}, annotations={"alibabacloud.com/gpu-milli": "500", "alibabacloud.com/gpu-count": "1"}),
    ),
    "mig_profile_unavailable": ("simulated", "mig-profile-unavailable", pod({"nvidia.com/mig-7g.80gb": "1"})),
    "amd_partition_unavailable": ("simulated", "amd-partition-unavailable", pod({"amd.com/cpx_nps4": "1"})),
    "no_nvlink_set": ("simulated", "no-nvlink-set", pod({GPUS: "4"}, L40S)),
    "multi_node_without_group": (
        "rack",
        "multi-node-without-group",
        pod(
            {GPUS: "4"},
            image="trainer",
            command=["torchrun"],
            args=["--nnodes", "8", "train.py"],
            env=[{"name": "NNODES", "value": "8"}, {"name": "MASTER_ADDR", "value": "train-0"}],
        ),
    ),
    "parallelism_mismatch": (
        "simulated",
        "parallelism-mismatch",
        pod({GPUS: "1"}, H100, **vllm("meta-llama/Llama-3.1-8B-Instruct", "--tensor-parallel-size", "4")),
    ),
    "tp_on_shared_gpu": (
        "simulated",
        "tp-on-shared-gpu",
        pod({GPUS: "2"}, T4, **vllm("Qwen/Qwen2.5-0.5B", "--tensor-parallel-size", "2")),
    ),
    "mig_multi_slice": ("simulated", "mig-multi-slice", pod({"nvidia.com/mig-1g.5gb": "2"})),
    "timeslice_multi_gpu": ("simulated", "timeslice-multi-gpu", pod({GPUS: "2"}, T4)),
    "timeslice_latency_sensitive": (
        "simulated",
        "timeslice-latency-sensitive",
        {**pod({GPUS: "1"}, T4), "spec": {**pod({GPUS: "1"}, T4)["spec"], "priority": 2_000_000}},
    ),
    "timeslice_memory": (
        "simulated",
        "timeslice-memory",
        pod({GPUS: "1"}, T4, **vllm("Qwen/Qwen2.5-0.5B", "--gpu-memory-utilization", "0.9", "--max-model-len", "4096")),
    ),
    "mps_memory": ("shared", "mps-memory", pod({GPUS: "1"}, {"pool": "mps"}, **vllm("meta-llama/Llama-3.1-8B"))),
    "model_does_not_fit": (
        "simulated",
        "model-does-not-fit",
        pod(
            {GPUS: "1"},
            H100,
            image="ghcr.io/huggingface/text-generation-inference",
            args=["--model-id", "meta-llama/Meta-Llama-3-70B-Instruct", "--dtype", "bfloat16"],
            env=[{"name": "NUM_SHARD", "value": "1"}],
        ),
    ),
    "whole_gpu_small_model": (
        "simulated",
        "whole-gpu-small-model",
        pod({GPUS: "1"}, H100, **vllm("Qwen/Qwen2.5-7B-Instruct-AWQ", "--quantization", "awq")),
    ),
}


def _advisor(cluster: str) -> Advisor:
    if cluster == "shared":
        nodes = [{"name": "a100-mps", "gpus": 16, "labels": {**MPS, "pool": "mps"}}]
        state = parse_snapshot({"nodes": nodes}).cluster("shared")
    else:
        state = simulated_cluster(now=NOW, rack=cluster == "rack").cluster(cluster)
    return Advisor(state=state, telemetry=None, policy=ScoringPolicy(), clock=lambda: NOW)


@pytest.fixture(scope="module")
def clients() -> Iterator[dict[str, TestClient]]:
    opened = {
        c: TestClient(create_app(_advisor(c)), raise_server_exceptions=False) for c in ("simulated", "rack", "shared")
    }
    for client in opened.values():
        client.__enter__()
    yield opened
    for client in opened.values():
        client.__exit__(None, None, None)


def review(obj: Any) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "u-7", "kind": {"kind": "Pod"}, "namespace": "ml", "operation": "CREATE", "object": obj},
    }


def warnings_of(client: TestClient, obj: Any, endpoint: str = "/admission/validate") -> list[str]:
    # json.dumps writes inf and NaN as Infinity and NaN, which the server's JSON reader takes, as Python's does.
    reply = client.post(endpoint, content=json.dumps(review(obj)), headers={"Content-Type": "application/json"})
    assert reply.status_code == 200, reply.text[:300]
    response = reply.json()["response"]
    assert response["uid"] == "u-7"
    return list(response.get("warnings", []))


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [f"{r.getMessage()}: {r.exc_info[1]!r}" for r in caplog.records if r.exc_info] + [
        r.getMessage() for r in caplog.records if "Traceback" in r.getMessage()
    ]


def test_every_rule_has_a_pod_here_that_it_speaks_about() -> None:
    assert sorted(BASES) == sorted(rule.__name__ for rule in RULES)


@pytest.mark.parametrize("rule", list(BASES))
def test_every_field_of_a_pod_a_rule_speaks_about_may_be_hostile_without_a_traceback(
    clients: dict[str, TestClient], caplog: pytest.LogCaptureFixture, rule: str
) -> None:
    caplog.set_level(logging.DEBUG)
    cluster, code, base = BASES[rule]
    client = clients[cluster]
    assert any(w.startswith(f"{code}: ") for w in warnings_of(client, base)), "the rule speaks about the real pod"
    failures = []
    for path in paths(base):
        for value in HOSTILE:
            mutant = replaced(base, path, value)
            for endpoint in ("/admission/validate", "/admission/validate/enforce", "/admission/mutate"):
                caplog.clear()
                try:
                    warnings_of(client, mutant, endpoint)
                except AssertionError as exc:
                    failures.append((endpoint, path, repr(value)[:30], str(exc)[:200]))
                if found := tracebacks(caplog):
                    failures.append((endpoint, path, repr(value)[:30], found[0][:200]))
    assert not failures, failures[:5]


# (where, hostile value, what the warning says): fields only the rules read, of the wrong type.
WRONG_TYPED = [
    (("spec", "priority"), "high", "spec.priority must be a whole number from -2147483648 to 2147483647, not 'high'"),
    # an object or a list is refused where the pod comes in, as by the extender: not a scalar at all
    (("spec", "priority"), {"a": 1}, "spec.priority must be a string or number, not an object"),
    (("spec", "priority"), float("inf"), "spec.priority must be a whole number from -2147483648 to 2147483647, not"),
    (("spec", "priority"), float("nan"), "spec.priority must be a whole number from -2147483648 to 2147483647, not"),
    (("spec", "priority"), 10**400, "spec.priority must be a whole number from -2147483648 to 2147483647, not a"),
    (("spec", "priority"), [5], "spec.priority must be a string or number, not a list"),
    (("spec", "priorityClassName"), {"x": 1}, "spec.priorityClassName must be a string or number, not an object"),
    (("spec", "containers", 0, "command"), {"a": 1}, "spec.containers[0].command must be a list, not an object"),
    (("spec", "containers", 0, "args"), 4, "spec.containers[0].args must be a list, not a number"),
    (("spec", "containers", 0, "args", 1), {"n": 8}, "spec.containers[0].args[1] must be a string or number, not an"),
    (("spec", "containers", 0, "env"), {"NNODES": "8"}, "spec.containers[0].env must be a list, not an object"),
    (("spec", "containers", 0, "env", 0, "value"), ["8"], "spec.containers[0].env[0].value must be a string or"),
    (("spec", "containers", 0, "image"), ["vllm"], "spec.containers[0].image must be a string or number, not a list"),
]


@pytest.mark.parametrize(("path", "value", "said"), WRONG_TYPED, ids=[f"{p[-1]}={v!r:.12}" for p, v, _ in WRONG_TYPED])
def test_a_wrong_typed_field_a_rule_reads_is_a_warning_naming_it(
    clients: dict[str, TestClient], caplog: pytest.LogCaptureFixture, path: tuple[Any, ...], value: Any, said: str
) -> None:
    caplog.set_level(logging.DEBUG)
    base = BASES["multi_node_without_group"][2]
    base = {**base, "spec": {**base["spec"], "priority": 5, "priorityClassName": "batch"}}
    warned = warnings_of(clients["rack"], replaced(base, path, value))
    assert warned[0].startswith(f"invalid-gpu-request: {said}"[:120].removesuffix("...")), warned
    assert tracebacks(caplog) == []


def test_null_fits_every_field_as_kubernetes_leaves_empty_ones_out(clients: dict[str, TestClient]) -> None:
    base = BASES["multi_node_without_group"][2]
    for path in (("spec", "containers", 0, "env"), ("spec", "containers", 0, "command"), ("spec", "priority")):
        assert not any(
            w.startswith("invalid-gpu-request") for w in warnings_of(clients["rack"], replaced(base, path, None))
        )


def test_the_dry_run_gives_the_same_finding_for_a_field_only_the_rules_read(
    clients: dict[str, TestClient], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    pod = replaced(BASES["timeslice_latency_sensitive"][2], ("spec", "priority"), "high")
    reply = clients["simulated"].post("/v1/dry-run", json=pod)
    assert reply.status_code == 200, reply.text[:300]
    (finding,) = [f for f in reply.json()["findings"] if f["code"] == "invalid-gpu-request"]
    assert finding["message"].startswith("spec.priority must be a whole number")
    assert tracebacks(caplog) == []
