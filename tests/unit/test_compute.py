"""CPU and memory quantities, and what a pod requests of them (init containers and sidecars included)."""

from __future__ import annotations

from typing import Any

import pytest

from extender.model.compute import cpu_milli, memory_mib, pod_compute
from extender.model.pods import PodSpecError, pod_request


@pytest.mark.parametrize(
    ("text", "milli"), [("500m", 500), ("2", 2000), ("0.5", 500), (3, 3000), ("1k", 1_000_000), ("0.0001", 1)]
)
def test_cpu_quantities_in_milli(text: Any, milli: int) -> None:
    assert cpu_milli(text) == milli


@pytest.mark.parametrize(
    ("text", "mib"), [("16Gi", 16384), ("512Mi", 512), ("1G", 954), ("1048576", 1), ("1.5Gi", 1536)]
)
def test_memory_quantities_in_mib(text: str, mib: int) -> None:
    assert memory_mib(text) == mib


@pytest.mark.parametrize("text", ["lots", "1e3", "-1", "2 cores", "", True])
def test_a_malformed_quantity_names_the_field(text: Any) -> None:
    with pytest.raises(PodSpecError, match=r"^spec.containers\[0\]"):
        cpu_milli(text, "spec.containers[0].resources.requests.cpu")


def container(cpu: str, memory: str, **extra: Any) -> dict[str, Any]:
    return {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}, **extra}


def test_a_pod_requests_app_containers_and_sidecars_summed_and_at_least_its_largest_init_container() -> None:
    spec = {
        "containers": [container("1", "1Gi"), container("500m", "1Gi")],
        "initContainers": [container("4", "1Gi"), container("250m", "512Mi", restartPolicy="Always")],
    }
    # app 1 + 0.5 + sidecar 0.25 = 1.75 CPUs < init 4; memory 1 + 1 + 0.5 GiB > init 1 GiB
    assert pod_compute(spec) == (4000, 2560)
    assert pod_request({"spec": spec}).cpu_milli == 4000


def test_a_limit_alone_counts_as_the_request() -> None:
    spec = {"containers": [{"name": "c", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]}
    assert pod_compute(spec) == (2000, 1024)
