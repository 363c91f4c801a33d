"""Malformed shared-GPU requests are refused with a message that starts with the field at fault."""

from __future__ import annotations

from typing import Any

import pytest

from extender.model.gpu_share import share_request, whole_number
from extender.model.pods import PodSpecError
from tests.unit.test_gpu_share import pod

MILLI = 'metadata.annotations["alibabacloud.com/gpu-milli"]'
COUNT = 'metadata.annotations["alibabacloud.com/gpu-count"]'
LIMIT = 'spec.containers[0].resources.limits["{}"]'


def alibaba(milli: Any = None, count: Any = None) -> dict[str, Any]:
    notes = {"alibabacloud.com/gpu-milli": milli, "alibabacloud.com/gpu-count": count}
    return pod(annotations={k: v for k, v in notes.items() if v is not None})


GPU, GPUMEM, PERCENT, CORES, ALIYUN = (
    "nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpumem-percentage", "nvidia.com/gpucores", "aliyun.com/gpu-mem",
)  # fmt: skip


@pytest.mark.parametrize(
    ("manifest", "field", "reason"),
    [
        (alibaba("1200", "1"), MILLI, "1200 is over 1000"),
        (alibaba("-5", "1"), MILLI, "is negative"),
        (alibaba("half", "1"), MILLI, "is not a number"),
        (alibaba("NaN", "1"), MILLI, "is not a number"),
        (alibaba(float("inf"), "1"), MILLI, "is not a number"),
        (alibaba("500m", "1"), MILLI, "is not a number"),
        (alibaba("0.5", "1"), MILLI, "is not a whole number"),
        (alibaba(True, "1"), MILLI, "is not a number"),
        (alibaba("500", "0"), COUNT, "a count of 0 with a share"),
        (alibaba("500"), COUNT, "missing"),
        (alibaba("500", "2"), COUNT, "exactly one GPU"),
        (alibaba(count="2"), MILLI, "missing beside"),
        (pod({GPU: 1, PERCENT: 150}), LIMIT.format(PERCENT), "150 is over 100"),
        (pod({GPU: 1, CORES: 101}), LIMIT.format(CORES), "101 is over 100"),
        (pod({GPU: 1, GPUMEM: "3Gi"}), LIMIT.format(GPUMEM), "is not a number (MiB"),
        (pod({GPU: 1, GPUMEM: 2_000_000}), LIMIT.format(GPUMEM), "is over 1048576"),
        (pod({GPU: 1, GPUMEM: -1}), LIMIT.format(GPUMEM), "is negative"),
        (pod({GPU: 0, GPUMEM: 3000}), LIMIT.format(GPU), "a count of 0 with a share"),
        (pod({ALIYUN: "two"}), LIMIT.format(ALIYUN), "is not a number"),
        (pod({ALIYUN: 2048}), LIMIT.format(ALIYUN), "more than any GPU"),
    ],
)
def test_a_malformed_share_is_refused_naming_its_field(manifest: dict[str, Any], field: str, reason: str) -> None:
    with pytest.raises(PodSpecError) as caught:
        share_request(manifest)
    assert str(caught.value).startswith(field + ":") and reason in str(caught.value)


@pytest.mark.parametrize(
    ("manifest", "fields"),
    [
        ({**alibaba("500", "1"), "spec": pod({GPUMEM: 3000})["spec"]}, (MILLI, LIMIT.format(GPUMEM))),
        ({**alibaba("500", "1"), "spec": pod({ALIYUN: 4})["spec"]}, (MILLI, LIMIT.format(ALIYUN))),
        (pod({ALIYUN: 4, CORES: 30}), (LIMIT.format(CORES), LIMIT.format(ALIYUN))),
        (pod({ALIYUN: 4, GPU: 1}), (LIMIT.format(GPU), LIMIT.format(ALIYUN))),
        ({**alibaba("1000", "2"), "spec": pod({GPU: 2})["spec"]}, (LIMIT.format(GPU), MILLI)),
    ],
)
def test_two_conventions_in_one_pod_are_refused_naming_both(manifest: dict[str, Any], fields: tuple[str, str]) -> None:
    with pytest.raises(PodSpecError, match="use one convention") as caught:
        share_request(manifest)
    assert all(f in str(caught.value) for f in fields)


def test_a_request_unlike_its_limit_is_refused_naming_both() -> None:
    manifest = pod({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000})
    manifest["spec"]["containers"][0]["resources"]["requests"] = {"nvidia.com/gpumem": 2000}
    with pytest.raises(PodSpecError) as caught:
        share_request(manifest)
    assert str(caught.value) == (
        'spec.containers[0].resources.limits["nvidia.com/gpumem"]: 3000 differs from '
        'spec.containers[0].resources.requests["nvidia.com/gpumem"] 2000'
    )


def test_hami_containers_asking_different_shares_are_refused() -> None:
    manifest = pod({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000})
    manifest["spec"]["containers"].append({"name": "b", "resources": {"limits": {"nvidia.com/gpu": 1}}})
    with pytest.raises(PodSpecError, match=r"^spec\.containers\[1\]: asks \(None, 100, 100\).*one share per pod"):
        share_request(manifest)


def test_whole_number_takes_json_numbers_and_decimal_text() -> None:
    assert [whole_number(v, "f", "n") for v in (7, 7.0, " 7 ", "7.0", "+7")] == [7, 7, 7, 7, 7]
