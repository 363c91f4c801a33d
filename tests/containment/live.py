"""A KubeSource against the HTTP-level fake API server, with its own metrics registry."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubernetes import client
from prometheus_client import CollectorRegistry, generate_latest

from extender.cluster.state import ClusterState
from extender.sources.kube_watch import KubeSource
from tests.fakes.apiserver import FakeApiServer

POISON = "9" * 400 + "Gi"  # a valid annotation string to the API server; 1e400 MiB to a float


def eventually(check: Callable[[], bool], timeout: float = 8.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


def live_source(fake: FakeApiServer, **kwargs: Any) -> tuple[KubeSource, CollectorRegistry]:
    cfg = client.Configuration()
    cfg.host = fake.url
    registry = CollectorRegistry()
    source = KubeSource(
        client.CoreV1Api(client.ApiClient(cfg)),
        ClusterState("kube"),
        watch_timeout_s=2,
        backoff_s=0.05,
        registry=registry,
        **kwargs,
    )
    return source, registry


def metric(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    """One sample's value from the registry, as /metrics would show it."""
    for family in registry.collect():
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return None


def exposition(registry: CollectorRegistry) -> str:
    return generate_latest(registry).decode()


def free(source: KubeSource, name: str) -> int | None:
    node = source.state.node(name)
    return None if node is None else node.free_now


def annotated(obj: dict[str, Any], **annotations: str) -> dict[str, Any]:
    obj["metadata"].setdefault("annotations", {}).update(annotations)
    return obj
