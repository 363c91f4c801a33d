"""The webhooks answer every review with an AdmissionReview echoing its uid: values the model cannot
read are findings (denied under enforce, warned otherwise), and gpu-advisor's own failure on the
enforce endpoint is logged, counted and denied with a message, never admitted through failurePolicy."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.http.advisor import Advisor
from tests.webhook.test_admission_api import gpu_pod, review

POISON = "9" * 400 + "Gi"  # a valid string to the API server; float("9"*400) is inf


def with_annotation(value: str) -> dict[str, Any]:
    pod = gpu_pod(1)
    pod["metadata"]["annotations"] = {"gpu-advisor.io/gpu-memory": value}
    return pod


def with_metadata(meta: Any) -> dict[str, Any]:
    pod = gpu_pod(1)
    pod["metadata"] = meta
    return pod


def with_null_container() -> dict[str, Any]:
    pod = gpu_pod(1)
    pod["spec"]["containers"].append(None)
    return pod


BAD_OBJECTS = {
    "400 nines of gpu-memory": with_annotation(POISON),
    "gpu-memory NaN": with_annotation("NaNGi"),
    "metadata is a list": with_metadata(["not", "a", "dict"]),
    "metadata is a string": with_metadata("x"),
    "a null container": with_null_container(),
    "spec is a list": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": [1]},
    "deployment template spec is a string": {"kind": "Deployment", "spec": {"template": {"spec": "x"}}},
}


@pytest.mark.parametrize("obj", BAD_OBJECTS.values(), ids=BAD_OBJECTS.keys())
def test_an_unreadable_object_is_denied_under_enforce_with_the_reason(api: TestClient, obj: dict[str, Any]) -> None:
    doc = review(obj)
    reply = api.post("/admission/validate/enforce", json=doc)
    assert reply.status_code == 200
    response = reply.json()["response"]
    assert response["uid"] == doc["request"]["uid"]
    assert response["allowed"] is False and "invalid-gpu-request" in response["status"]["message"]


@pytest.mark.parametrize("obj", BAD_OBJECTS.values(), ids=BAD_OBJECTS.keys())
def test_an_unreadable_object_is_warned_about_in_warn_mode_and_left_unpatched(
    api: TestClient, obj: dict[str, Any]
) -> None:
    doc = review(obj)
    warned = api.post("/admission/validate", json=doc).json()["response"]
    assert warned["allowed"] is True and warned["warnings"][0].startswith("invalid-gpu-request: ")
    mutated = api.post("/admission/mutate", json=doc)
    assert mutated.status_code == 200 and mutated.json()["response"]["allowed"] is True


def test_the_poison_annotation_is_named_in_the_denial(api: TestClient) -> None:
    response = api.post("/admission/validate/enforce", json=review(with_annotation(POISON))).json()["response"]
    assert "annotation gpu-advisor.io/gpu-memory: '99999999999999999999" in response["status"]["message"]


def test_an_internal_failure_under_enforce_is_denied_logged_and_counted(
    api: TestClient, advisor: Advisor, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_: Any) -> list[Any]:
        raise RuntimeError("rules exploded")

    monkeypatch.setattr("webhook.admission.evaluate_rules", broken)
    doc = review(gpu_pod(2))
    response = api.post("/admission/validate/enforce", json=doc).json()["response"]
    assert response == {
        "uid": doc["request"]["uid"],
        "allowed": False,
        "status": {
            "code": 403,
            "reason": "Forbidden",
            "message": "gpu-advisor could not judge this object: an internal error (see its logs); "
            "denied because the namespace enforces",
        },
    }
    warned = api.post("/admission/validate", json=doc).json()["response"]
    assert warned["allowed"] is True and warned["warnings"] == [
        "gpu-advisor could not judge this object: an internal error (see its logs)"
    ]
    assert "could not be judged" in caplog.text and "rules exploded" in caplog.text
    failures = advisor.registry.get_sample_value(
        "gpu_advisor_admission_failures_total", {"endpoint": "validate-enforce"}
    )
    assert failures == 1.0


def test_a_review_with_a_uid_but_a_bad_shape_is_answered_with_that_uid(api: TestClient) -> None:
    doc = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u-1", "kind": 3}}
    response = api.post("/admission/validate/enforce", json=doc).json()["response"]
    assert response["uid"] == "u-1" and response["allowed"] is False
    assert response["status"]["message"].startswith("gpu-advisor could not judge this object: not an admission.k8s.io")
    assert api.post("/admission/validate", json=doc).json()["response"]["allowed"] is True
