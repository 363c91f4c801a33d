"""GPU quantities and sizes are read exactly: whole, finite, non-negative, or a clear error."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from extender.http.advisor import Advisor
from extender.model.pods import PodSpecError, parse_memory_mib, pod_request, pod_request_keeping_counts
from extender.model.quantity import QuantityError, count_quantity
from gpu_advisor.app import create_app
from tests.api.test_extender_api import args
from tests.containment.live import POISON


@pytest.mark.parametrize(
    ("value", "count"),
    [
        ("8", 8),
        (8, 8),
        ("1k", 1000),  # decimal suffix: 1 × 1000
        ("1Ki", 1024),  # binary suffix: 1 × 2¹⁰
        ("2e3", 2000),  # exponent: 2 × 10³
        ("1000m", 1),  # 1000 milli-units = 1
        ("1.0", 1),
        ("0", 0),
    ],
)
def test_whole_quantities_are_counts(value: object, count: int) -> None:
    assert count_quantity(value) == count


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("NaN", "not a number"),
        ("inf", "not a number"),
        (float("nan"), "not a finite count"),
        ("1e400", "larger than any count"),  # 10⁴⁰⁰ > 2⁶³ − 1
        ("-1", "negative"),
        ("0.5", "not a whole number"),
        ("10m", "not a whole number"),  # 0.01
        (POISON, "not a number"),  # 402 characters: refused before any arithmetic
        (True, "not a count"),
    ],
)
def test_anything_else_is_a_clear_error(value: object, why: str) -> None:
    with pytest.raises(QuantityError, match=why):
        count_quantity(value)


@pytest.mark.parametrize(
    ("text", "mib"),
    [("40Gi", 40 * 1024), ("80GB", round(80e9 / 2**20)), ("1.5Gi", 1536), ("20000Mi", 20000)],
)
def test_memory_sizes_in_exact_arithmetic(text: str, mib: int) -> None:
    assert parse_memory_mib(text) == mib


def test_the_poison_memory_size_is_an_error_not_an_overflow() -> None:
    with pytest.raises(PodSpecError, match=r"… \(402 characters\) is larger than any GPU's memory"):
        parse_memory_mib(POISON)


def test_a_running_pods_bad_knob_is_dropped_and_its_counts_kept() -> None:
    pod = {
        "metadata": {"annotations": {"gpu-advisor.io/gpu-memory": POISON, "gpu-advisor.io/interconnect": "nvlink"}},
        "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
    }
    request, problems = pod_request_keeping_counts(pod)
    assert request.gpus == 8 and request.interconnect == "nvlink" and request.gpu_memory_mib is None
    assert len(problems) == 1 and "gpu-memory" in problems[0]
    with pytest.raises(PodSpecError):
        pod_request(pod)  # a pod still to be placed or admitted hears about it


@pytest.mark.parametrize("count", ["NaN", "inf", "1e400"])
def test_the_filter_answers_without_error_for_an_unreadable_gpu_count(advisor: Advisor, count: str) -> None:
    """Before: ValueError/OverflowError inside the filter, answered as Error to kube-scheduler."""
    reply = TestClient(create_app(advisor)).post("/scheduler/filter", json=args({"nvidia.com/gpu": count}))
    assert reply.status_code == 200 and reply.json()["Error"] == ""
