"""The DRA objects the advisor reads are the ones resource.k8s.io/v1 defines: each test object, captured
or hand-made, survives a round trip through the kubernetes client's v1 model unchanged (a field the
model does not know would be dropped)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client import ApiClient

from tests.dra.objects import DRA, load

MODELS = {
    "dra-deviceclass.json": "V1DeviceClass",
    "dra-resourceslice.json": "V1ResourceSlice",
    "handmade-resourceslice-node-2.json": "V1ResourceSlice",
    "dra-resourceclaim-allocated.json": "ResourceV1ResourceClaim",
    "dra-resourceclaimtemplate.json": "V1ResourceClaimTemplate",
    "handmade-resourceclaimtemplate-two-gpus.json": "V1ResourceClaimTemplate",
    "dra-pod-bound.json": "V1Pod",
}


def _round_trip(doc: dict[str, Any], model: str) -> Any:
    client = ApiClient()
    model_object = client.deserialize(json.dumps(doc), model, "application/json")
    # The client writes times back as +00:00 where the API server wrote Z: the same instant.
    written = client.sanitize_for_serialization(model_object)  # type: ignore[no-untyped-call]
    return json.loads(json.dumps(written).replace('+00:00"', 'Z"'))


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def test_every_json_file_of_the_test_data_has_a_model() -> None:
    objects = {
        p.name for p in DRA.glob("*.json") if not p.name.startswith(("extender-", "handmade-nodes", "dra-cluster"))
    }
    assert objects == set(MODELS)


@pytest.mark.parametrize(("name", "model"), sorted(MODELS.items()))
def test_the_object_fits_the_resource_v1_model(name: str, model: str) -> None:
    doc = load(name)
    assert doc["apiVersion"] in ("resource.k8s.io/v1", "v1")
    assert _round_trip(doc, model) == _without_nulls(doc)  # a null field is an absent one


def test_a_field_v1_does_not_know_is_caught() -> None:
    doc = load("dra-resourceclaimtemplate.json")
    doc["spec"]["spec"]["devices"]["requests"][0]["exactly"]["gpuCount"] = 2
    assert _round_trip(doc, "V1ResourceClaimTemplate") != doc
