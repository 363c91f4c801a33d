"""diagnose names a pod whose scheduler cannot count its GPU share, first, with the fix; and says nothing of
the scheduler where it can count it or kube-scheduler counts the pod itself."""

from __future__ import annotations

from typing import Any

import pytest

from extender.advice.diagnose import diagnose
from extender.scoring import ScoringPolicy
from tests.routing.pods import ALIBABA, pod


def diagnosed(p: dict[str, Any]) -> dict[str, Any]:
    return diagnose(p, {}, None, ScoringPolicy(), 0.0).to_dict()


@pytest.mark.parametrize(
    ("p", "share"),
    [
        (pod(annotations=ALIBABA), "alibaba"),
        (pod({"nvidia.com/gpu": "1", "nvidia.com/gpumem": "8000"}, scheduler="volcano"), "hami"),
        (pod({"aliyun.com/gpu-mem": "8"}, scheduler=""), "aliyun"),
    ],
    ids=["alibaba-on-default", "hami-on-volcano", "aliyun-on-empty"],
)
def test_a_share_on_a_scheduler_that_cannot_count_it_is_the_answer(p: dict[str, Any], share: str) -> None:
    result = diagnosed(p)
    assert result["explained_by"] == "scheduler"
    first = result["steps"][0]
    scheduler = p["spec"]["schedulerName"] or "default-scheduler"
    assert first["finding"].startswith(f"its scheduler {scheduler} cannot count its {share} GPU share")
    assert "set spec.schedulerName: gpu-advisor" in first["finding"]
    assert first["evidence"] == [
        f"spec.schedulerName: {scheduler}",
        "schedulers that count it: gpu-advisor, hami-scheduler",
    ]


def test_a_placed_share_on_the_wrong_scheduler_is_named_before_its_application() -> None:
    p = pod(annotations=ALIBABA)
    p["spec"]["nodeName"] = "gpu-1"
    steps = diagnosed(p)["steps"]
    assert [s["step"] for s in steps][:2] == ["scheduler", "allocation"] and steps[0]["explains"]


@pytest.mark.parametrize(
    "p",
    [
        pod(annotations=ALIBABA, scheduler="gpu-advisor"),
        pod({"nvidia.com/gpumem": "8000"}, scheduler="hami-scheduler"),
        pod({"nvidia.com/gpu": "2"}),  # whole GPUs: kube-scheduler counts them itself
        pod({"amd.com/gpu": "1"}, scheduler="volcano"),
        # A manifest not yet admitted names none: routing will send it to the advisor.
        pod(annotations=ALIBABA, scheduler=None),
    ],
    ids=["share-on-the-advisor", "hami-on-hami", "whole-gpus-on-default", "amd-elsewhere", "manifest-naming-none"],
)
def test_no_scheduler_step_where_the_scheduler_counts_the_pod(p: dict[str, Any]) -> None:
    assert all(s["step"] != "scheduler" for s in diagnosed(p)["steps"])
