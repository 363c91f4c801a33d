"""The admission endpoints in process: warn, enforce, the patch, templates of controllers, bad reviews."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.http.advisor import Advisor
from gpu_advisor.app import create_app
from webhook.admission import AdmissionSettings

KUBE = Path(__file__).parents[1] / "data" / "kube"
H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}


def review(obj: dict[str, Any], operation: str = "CREATE") -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((KUBE / "admission-validate-pod-create.json").read_text())
    doc["request"]["object"] = obj
    doc["request"]["operation"] = operation
    kind = obj.get("kind", "Pod")
    doc["request"]["kind"] = {"group": "" if kind == "Pod" else "apps", "version": "v1", "kind": kind}
    return doc


def by_advisor(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod scheduled by the profile that asks the advisor (no scheduler-skips-advisor finding)."""
    pod["spec"]["schedulerName"] = "gpu-advisor"
    return pod


def gpu_pod(gpus: int = 1, selector: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}, **extra}
    spec: dict[str, Any] = {"containers": [container], "schedulerName": "default-scheduler"}
    if selector:
        spec["nodeSelector"] = selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}, "spec": spec}


def apply_patch(obj: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    """A JSONPatch applier for the ops the webhook emits (add, replace, remove on object members)."""
    out = copy.deepcopy(obj)
    for op in json.loads(base64.b64decode(response["patch"])):
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        target = out
        for part in parents:
            target = target[part]
        if op["op"] == "remove":
            del target[last]
        else:
            target[last] = op["value"]
    return out


def test_warn_mode_warns_but_never_denies_even_an_error(api: TestClient) -> None:
    reply = api.post("/admission/validate", json=review(gpu_pod(16, H100))).json()["response"]
    assert reply["allowed"] is True and "status" not in reply
    assert reply["warnings"][0] == "exceeds-largest-node: asks for 16 GPUs; the largest of the 1 nodes it may use has 8"
    assert all(len(w.encode()) <= 120 for w in reply["warnings"]), "the API server counts bytes"


def test_enforce_mode_denies_errors_naming_the_rule_and_the_fix(api: TestClient) -> None:
    reply = api.post("/admission/validate/enforce", json=review(gpu_pod(16, H100))).json()["response"]
    assert reply["allowed"] is False and reply["status"]["code"] == 403
    message = reply["status"]["message"]
    assert (
        "exceeds-largest-node: asks for 16 GPUs" in message
        and "fix: request at most 8 nvidia.com/gpu per pod" in message
    )


def test_enforce_mode_allows_warnings_only(api: TestClient) -> None:
    lcl = {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    reply = api.post("/admission/validate/enforce", json=review(by_advisor(gpu_pod(4, lcl)))).json()["response"]
    assert reply["allowed"] is True and reply["warnings"][0].startswith("no-nvlink-set:")


def test_a_deployment_is_judged_by_its_pod_template(api: TestClient) -> None:
    template = gpu_pod(16, H100)
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ml"},
        "spec": {"replicas": 2, "template": {"metadata": {}, "spec": template["spec"]}},
    }
    reply = api.post("/admission/validate", json=review(deployment)).json()["response"]
    assert reply["warnings"][0].startswith("exceeds-largest-node: asks for 16 GPUs")


def test_a_cronjob_is_judged_by_its_job_template(api: TestClient) -> None:
    spec = gpu_pod(16, H100)["spec"]
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "c", "namespace": "ml"},
        "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": {"spec": spec}}}},
    }
    assert (
        "exceeds-largest-node" in api.post("/admission/validate", json=review(cron)).json()["response"]["warnings"][0]
    )


def test_mutate_adds_the_advice_annotation_and_is_idempotent(api: TestClient) -> None:
    pod = by_advisor(gpu_pod(16, H100))
    first = api.post("/admission/mutate", json=review(pod)).json()["response"]
    assert first["patchType"] == "JSONPatch" and "warnings" not in first
    patched = apply_patch(pod, first)
    assert patched["metadata"]["annotations"] == {"gpu-advisor.io/advice": "exceeds-largest-node"}
    again = api.post("/admission/mutate", json=review(patched)).json()["response"]
    assert again == {"uid": again["uid"], "allowed": True}, "reinvocation changes nothing"


def test_mutate_removes_advice_that_no_longer_applies(api: TestClient) -> None:
    pod = gpu_pod(2, H100)
    pod["metadata"]["annotations"] = {"gpu-advisor.io/advice": "exceeds-largest-node", "team": "ml"}
    reply = api.post("/admission/mutate", json=review(pod, "UPDATE")).json()["response"]
    assert apply_patch(pod, reply)["metadata"]["annotations"] == {"team": "ml"}


def test_route_gpu_pods_to_sets_the_scheduler_of_pods_that_chose_none(advisor: Advisor) -> None:
    with TestClient(create_app(advisor, AdmissionSettings(route_gpu_pods_to="gpu-advisor"))) as client:
        pod = gpu_pod(2, H100)
        routed = apply_patch(pod, client.post("/admission/mutate", json=review(pod)).json()["response"])
        assert routed["spec"]["schedulerName"] == "gpu-advisor"
        chosen = gpu_pod(2, H100)
        chosen["spec"]["schedulerName"] = "volcano"
        kept = apply_patch(chosen, client.post("/admission/mutate", json=review(chosen)).json()["response"])
        assert kept["spec"]["schedulerName"] == "volcano"  # a scheduler the pod chose is never overridden
        assert kept["metadata"]["annotations"] == {"gpu-advisor.io/advice": "scheduler-skips-advisor"}
        cpu_only = gpu_pod(1)
        cpu_only["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1"}}
        assert "patch" not in client.post("/admission/mutate", json=review(cpu_only)).json()["response"]
        # schedulerName is immutable once the Pod exists: an UPDATE must not touch it.
        updated = client.post("/admission/mutate", json=review(gpu_pod(2, H100), "UPDATE")).json()["response"]
        assert "patch" not in updated


def test_a_bad_gpu_advisor_annotation_is_an_error_finding(api: TestClient) -> None:
    pod = gpu_pod(1)
    pod["metadata"]["annotations"] = {"gpu-advisor.io/gpu-memory": "lots"}
    reply = api.post("/admission/validate/enforce", json=review(pod)).json()["response"]
    assert (
        reply["allowed"] is False
        and "invalid-gpu-request: annotation gpu-advisor.io/gpu-memory" in reply["status"]["message"]
    )


def test_deletes_and_pods_without_gpus_pass_silently(api: TestClient) -> None:
    assert api.post("/admission/validate/enforce", json=review(gpu_pod(16, H100), "DELETE")).json()["response"] == {
        "uid": "4f35ab77-71eb-4f74-8ec2-1bf0cdfcb903",
        "allowed": True,
    }
    cpu_only = gpu_pod(1)
    cpu_only["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1"}}
    assert "warnings" not in api.post("/admission/validate", json=review(cpu_only)).json()["response"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "body is not JSON"),
        (b"[]", "body must be a JSON object"),
        (
            json.dumps({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {}}).encode(),
            "apiVersion: Input should be 'admission.k8s.io/v1'",
        ),
        (
            json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
            "request: Field required",
        ),
        (
            json.dumps(
                {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "request": {"kind": {}, "operation": "CREATE"},
                }
            ).encode(),
            "request.uid: Field required",
        ),
    ],
    ids=["not-json", "array", "v1beta1", "no-request", "no-uid"],
)
def test_malformed_reviews_get_a_clear_400_on_every_endpoint(
    api: TestClient, body: bytes, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    for path in ("/admission/mutate", "/admission/validate", "/admission/validate/enforce"):
        reply = api.post(path, content=body, headers={"Content-Type": "application/json"})
        assert reply.status_code == 400 and message in reply.json()["detail"]
    assert "enforce-mode review unreadable" in caplog.text, "an enforce-mode 400 is admitted by failurePolicy: say so"
    assert api.post("/admission/validate", json=review(gpu_pod(1))).status_code == 200


def test_warnings_are_plain_ascii_within_120_bytes(api: TestClient) -> None:
    llama = gpu_pod(1, H100, args=["--model", "meta-llama/Meta-Llama-3-70B-Instruct"])
    warnings = api.post("/admission/validate", json=review(llama)).json()["response"]["warnings"]
    model = "meta-llama/Meta-Llama-3-70B-Instruct"
    assert warnings[0] == f"model-does-not-fit: {model} in bf16 ~ 140 GB (+20% ~ 168 GB) does not fit one 80 GB GPU"
    assert all(w.isascii() and len(w) <= 120 for w in warnings)
