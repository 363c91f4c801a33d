"""A manifest as users keep it and ``kubectl apply -f`` it: a Pod and the ResourceClaimTemplate it names,
as several YAML documents or as one ``v1 List``. The dry-run judges the Pod, its claim resolved from
the same file (the two-GPU template: 2 GPUs), though the cluster has never seen the template."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from tests.dra.objects import load, pending_pod

TEMPLATE = load("handmade-resourceclaimtemplate-two-gpus.json")
POD = {"apiVersion": "v1", "kind": "Pod", **pending_pod({"resourceClaimTemplateName": TEMPLATE["metadata"]["name"]})}


def as_yaml_documents(*docs: dict[str, Any]) -> bytes:
    return yaml.safe_dump_all(docs).encode()


def as_list(*docs: dict[str, Any]) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(docs)}).encode()


@pytest.mark.parametrize("shape", [as_yaml_documents, as_list], ids=["several YAML documents", "a v1 List"])
def test_the_pod_of_a_file_is_judged_with_the_claim_template_beside_it(api: TestClient, shape: Any) -> None:
    reply = api.post("/v1/dry-run", content=shape(TEMPLATE, POD), headers={"Content-Type": "application/yaml"})
    assert reply.status_code == 200, reply.text
    assert reply.json()["request"] == "2 GPUs"


def test_a_file_with_two_workloads_is_refused_naming_what_it_holds(api: TestClient) -> None:
    reply = api.post("/v1/dry-run", content=as_yaml_documents(POD, POD, TEMPLATE))
    assert reply.status_code == 422
    assert (
        "one Pod or workload to judge" in reply.json()["detail"]
        and "Pod, Pod, ResourceClaimTemplate" in reply.json()["detail"]
    )
