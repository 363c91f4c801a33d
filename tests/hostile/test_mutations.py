"""Every field of a real body, one at a time, replaced by a value of the wrong type: a string where an
object or a number goes ("high" as a quantity), an object where a list or a number goes, a list where
an object goes. Whatever the field, the reply is below 500 and the log holds no traceback: the body is
refused with a 400 that names what is wrong, or the protocol's fail-open answer is given."""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extender.http.advisor import Advisor
from extender.scoring import ScoringPolicy
from extender.sources.snapshot import simulated_cluster
from gpu_advisor.app import create_app
from tests.conftest import NOW

WRONG: list[Any] = ["high", "", {}, {"a": {"b": 1}}, [], [1, "x"], -1, 1e308, None, True]

TOPOLOGY = (
    '{"gpus":[{"index":0,"uuid":"GPU-0","product":"NVIDIA H100 80GB HBM3","memory_mib":81559},'
    '{"index":1,"uuid":"GPU-1","product":"NVIDIA H100 80GB HBM3","memory_mib":81559}],'
    '"links":[{"a":0,"b":1,"kind":"NV18"}]}'
)
NODE: dict[str, Any] = {
    "metadata": {
        "name": "sent-node",
        "resourceVersion": "7",
        "labels": {
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.memory": "81559",
            "nvidia.com/gpu.replicas": "1",
            "nvidia.com/gpu.sharing-strategy": "none",
            "nvidia.com/mig.strategy": "single",
        },
        "annotations": {
            "gpu-advisor.io/topology": TOPOLOGY,
            "gpu-advisor.io/free-gpus": '{"free":[0,1],"at":"2026-01-01T00:00:00Z"}',
        },
    },
    "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}], "unschedulable": False},
    "status": {
        "allocatable": {"nvidia.com/gpu": "2", "cpu": "32", "memory": "256Gi", "nvidia.com/mig-1g.10gb": "0"},
        "capacity": {"nvidia.com/gpu": "2", "cpu": "32", "memory": "256Gi"},
    },
}
POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "p",
        "namespace": "ml",
        "uid": "u-1",
        "labels": {"app": "train"},
        "annotations": {"gpu-advisor.io/gpu-memory": "40Gi", "gpu-advisor.io/role": "training"},
    },
    "spec": {
        "containers": [
            {
                "name": "c",
                "resources": {
                    "limits": {"nvidia.com/gpu": "2"},
                    "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "2"},
                },
            }
        ],
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}],
        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        "overhead": {"cpu": "100m"},
    },
}


def paths(doc: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into ``doc``, the root's children first."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield (*at, key)
            yield from paths(value, (*at, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield (*at, i)
            yield from paths(value, (*at, i))


def replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(doc)
    holder = out
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    return out


def mutants(doc: Any) -> list[Any]:
    return [replaced(doc, path, value) for path in paths(doc) for value in WRONG if value != _at(doc, path)]


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


class Tracebacks(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or "Traceback" in record.getMessage():
            self.records.append(f"{record.getMessage()}: {record.exc_info[1] if record.exc_info else ''}")


@pytest.fixture
def client() -> Iterator[tuple[TestClient, Tracebacks]]:
    advisor = Advisor(
        state=simulated_cluster(now=NOW).cluster("simulated"), telemetry=None, policy=ScoringPolicy(), clock=lambda: NOW
    )
    handler = Tracebacks()
    logging.getLogger().addHandler(handler)
    try:
        with TestClient(create_app(advisor), raise_server_exceptions=False) as c:
            yield c, handler
    finally:
        logging.getLogger().removeHandler(handler)


BODIES: dict[str, tuple[list[str], dict[str, Any]]] = {
    "Pod and Nodes (nodeCacheCapable: false)": (
        ["/scheduler/filter", "/scheduler/prioritize"],
        {"Pod": POD, "Nodes": {"metadata": {}, "items": [NODE, {**NODE, "metadata": {"name": "second"}}]}},
    ),
    "Pod and NodeNames": (["/scheduler/filter", "/scheduler/prioritize"], {"Pod": POD, "NodeNames": ["l40s-a"]}),
    "AdmissionReview": (
        ["/admission/mutate", "/admission/validate", "/admission/validate/enforce"],
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u-1",
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "namespace": "ml",
                "operation": "CREATE",
                "object": POD,
            },
        },
    ),
    "dry-run of a pod on a snapshot": (
        ["/v1/dry-run"],
        {
            "manifest": POD,
            "snapshot": {
                "time": "2026-01-01T00:00:00Z",
                "nodes": [
                    {
                        "name": "n",
                        "topology": TOPOLOGY,
                        "labels": {"nvidia.com/gpu.replicas": "1"},
                        "gpus": 2,
                        "capacity": 2,
                        "mig": {"1g.10gb": 0},
                        "free": [0, 1],
                        "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
                        "telemetry": [{"gpu": 0, "sm_util": 10, "memory_total_mib": 81559, "sm_history": [1, 2]}],
                    },
                    {"name": "m", "machine": "dgx1-v100"},
                ],
                "pods": [
                    {
                        "name": "q",
                        "namespace": "ml",
                        "gpus": 1,
                        "mig": {"1g.10gb": 1},
                        "gpu_memory": "10Gi",
                        "node": "n",
                        "node_selector": {"a": "b"},
                        "priority": 5,
                        "labels": {"a": "b"},
                    }
                ],
            },
        },
    ),
}


@pytest.mark.parametrize("name", list(BODIES))
def test_any_field_of_a_real_body_of_the_wrong_type_is_below_500_without_a_traceback(
    client: tuple[TestClient, Tracebacks], name: str
) -> None:
    api, tracebacks = client
    endpoints, body = BODIES[name]
    assert all(api.post(endpoint, json=body).status_code == 200 for endpoint in endpoints)  # the body is real
    failures = []
    for mutant in mutants(body):
        for endpoint in endpoints:
            before = len(tracebacks.records)
            reply = api.post(endpoint, json=mutant)
            if reply.status_code >= 500 or len(tracebacks.records) > before:
                failures.append((endpoint, reply.status_code, tracebacks.records[before:], str(mutant)[:300]))
    assert not failures, failures[:5]


def test_a_sent_node_whose_metadata_is_a_string_is_a_400_naming_it(client: tuple[TestClient, Tracebacks]) -> None:
    api, _ = client
    body = {"Pod": POD, "Nodes": {"items": [{**NODE, "metadata": "sent-node"}]}}
    for verb in ("filter", "prioritize"):
        reply = api.post(f"/scheduler/{verb}", json=body)
        assert reply.status_code == 400
        assert reply.json()["detail"].endswith("[0].metadata must be an object, not a string")
