"""The AdmissionReviews a real kube-apiserver v1.36 sent get replies it accepts; goldens in tests/golden/."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from extender.http.advisor import Advisor
from gpu_advisor.app import create_app
from tests.conftest import fixture_files
from tests.contract.test_extender_contract import check_golden
from webhook.admission import AdmissionSettings

REVIEWS = [p for p in fixture_files("kube") if p.name.startswith("admission-")]


def test_both_captured_reviews_are_here() -> None:
    assert {p.name for p in REVIEWS} >= {"admission-mutate-pod-create.json", "admission-validate-pod-create.json"}


@pytest.mark.parametrize("path", REVIEWS, ids=lambda p: p.name)
@pytest.mark.parametrize("variant", ["as-captured", "asks-16-gpus"])
def test_captured_reviews_get_the_exact_envelope_and_a_patch_only_on_mutate(
    advisor: Advisor, path: Path, variant: str
) -> None:
    body = json.loads(path.read_text())
    if variant == "asks-16-gpus":
        body["request"]["object"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "16"
        body["request"]["object"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "16"
    mutating = "mutate" in path.name
    with TestClient(create_app(advisor, AdmissionSettings(route_gpu_pods_to="gpu-advisor"))) as client:
        reply = client.post("/admission/mutate" if mutating else "/admission/validate", json=body)
    assert reply.status_code == 200
    doc = reply.json()
    assert doc["apiVersion"] == "admission.k8s.io/v1" and doc["kind"] == "AdmissionReview"
    assert doc["response"]["uid"] == body["request"]["uid"]
    if mutating:
        assert doc["response"]["patchType"] == "JSONPatch"
        ops = json.loads(base64.b64decode(doc["response"]["patch"]))
        assert {"op": "replace", "path": "/spec/schedulerName", "value": "gpu-advisor"} in ops
    else:
        assert "patch" not in doc["response"] and "patchType" not in doc["response"]
    check_golden(path.name.replace(".json", f".{variant}.reply.json"), doc)
