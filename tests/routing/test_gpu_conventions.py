"""One definition of a GPU pod: the Python reading and the CEL generated from the same table give the same
answer on every row, and so do the expressions in the committed manifests."""

from __future__ import annotations

import pytest
import yaml

from extender.model.gpu_conventions import (
    POD_OR_TEMPLATE,
    advisor_only,
    asked_conventions,
    cel_asks,
    cel_chose_no_scheduler,
    chose_no_scheduler,
    is_gpu_pod,
)
from tests.manifests.rendering import MANIFESTS
from tests.routing.cel import holds
from tests.routing.pods import ROWS, Row, pod
from webhook.admission_policies import webhook_match_conditions

IDS = [r.id for r in ROWS]


def as_deployment(p: dict[str, object]) -> dict[str, object]:
    return {"kind": "Deployment", "spec": {"template": {"metadata": p["metadata"], "spec": p["spec"]}}}


def as_cronjob(p: dict[str, object]) -> dict[str, object]:
    template = {"metadata": p["metadata"], "spec": p["spec"]}
    return {"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": template}}}}


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_python_reads_each_convention(row: Row) -> None:
    assert asked_conventions(row.pod) == row.conventions
    assert is_gpu_pod(row.pod) is row.gpu
    assert advisor_only(row.pod) is row.advisor_only


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_the_generated_cel_agrees_with_python(row: Row) -> None:
    assert holds(cel_asks("object.spec", "object.metadata"), row.pod) is row.gpu
    assert holds(cel_asks("object.spec", "object.metadata", advisor_only=True), row.pod) is row.advisor_only


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_the_webhooks_conditions_read_a_pod_and_every_workloads_template_alike(row: Row) -> None:
    expression = cel_asks(*POD_OR_TEMPLATE)
    for obj in (row.pod, as_deployment(row.pod), as_cronjob(row.pod)):
        assert holds(expression, obj) is row.gpu, obj["kind"]


def test_a_workload_template_without_metadata_is_read() -> None:
    bare = {"kind": "Job", "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}
    assert holds(cel_asks(*POD_OR_TEMPLATE), bare) is False


@pytest.mark.parametrize(
    ("scheduler", "none_chosen"),
    [(None, True), ("", True), ("default-scheduler", True), ("gpu-advisor", False), ("volcano", False)],
)
def test_a_pod_chose_no_scheduler_when_it_names_none_or_the_default(scheduler: str | None, none_chosen: bool) -> None:
    # The API server writes default-scheduler into a pod that names none while decoding it, before any
    # admission plugin, so admission cannot tell "none" from "the default, on purpose": both are routed.
    p = pod({"nvidia.com/gpu": "1"}, scheduler=scheduler)
    assert chose_no_scheduler(p) is none_chosen
    assert holds(cel_chose_no_scheduler(), p) is none_chosen


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_the_committed_webhook_conditions_are_the_generated_ones_and_agree(row: Row) -> None:
    generated = webhook_match_conditions()
    for name in ("mutating.yaml", "validating.yaml"):
        config = yaml.safe_load((MANIFESTS / "webhook" / name).read_text())
        for hook in config["webhooks"]:
            assert hook["matchConditions"] == generated, f"{name} {hook['name']}: paste webhook_match_conditions()"
            (condition,) = hook["matchConditions"]
            assert holds(condition["expression"], row.pod) is row.gpu
