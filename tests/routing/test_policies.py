"""The routing policy and the safety net, as committed and as kustomize installs them, against the table:
every GPU pod that chose no scheduler is routed to the advisor's profile; a share only the advisor counts is
refused on any scheduler that cannot count it, and only such a share."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpu_advisor.cli import main
from tests.manifests.admission_policy import evaluate
from tests.manifests.rendering import MANIFESTS, Doc, render
from tests.manifests.test_webhooks import selects
from tests.operate.chart import validate
from tests.routing.cel import mutate
from tests.routing.pods import ROWS, Row, pod

SHIPPED = MANIFESTS / "routing" / "policies.yaml"
SCHEDULERS = [None, "", "default-scheduler", "gpu-advisor", "hami-scheduler", "volcano"]
CASES = [(row, s) for row in ROWS for s in SCHEDULERS]
IDS = [f"{row.id}, schedulerName {s!r}" for row, s in CASES]
CREATE = {"operation": "CREATE", "kind": {"group": "", "version": "v1", "kind": "Pod"}}


@pytest.fixture(scope="module")
def installed() -> dict[str, Doc]:
    return {d["kind"]: d for d in render() if "AdmissionPolicy" in d["kind"] and "agent" not in d["metadata"]["name"]}


def with_scheduler(row: Row, scheduler: str | None) -> Doc:
    p: Doc = yaml.safe_load(yaml.safe_dump(row.pod))
    p["spec"].pop("schedulerName", None)
    if scheduler is not None:
        p["spec"]["schedulerName"] = scheduler
    return p


def test_the_shipped_policies_are_the_commands_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["admission-policies"]) == 0
    assert SHIPPED.read_text() == capsys.readouterr().out, "run: gpu-advisor admission-policies > " + str(
        SHIPPED.relative_to(MANIFESTS.parent)
    )


def test_kustomize_installs_routing_and_the_safety_net(installed: dict[str, Doc]) -> None:
    assert set(installed) == {
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
    for doc in installed.values():
        validate(doc, "v1.36.0")
    assert installed["ValidatingAdmissionPolicyBinding"]["spec"]["validationActions"] == ["Deny"]


@pytest.mark.parametrize(("row", "scheduler"), CASES, ids=IDS)
def test_every_gpu_pod_that_chose_no_scheduler_is_routed(
    installed: dict[str, Doc], row: Row, scheduler: str | None
) -> None:
    p = with_scheduler(row, scheduler)
    routed = row.gpu and scheduler in (None, "", "default-scheduler")
    after = mutate(installed["MutatingAdmissionPolicy"], p)
    assert after["spec"].get("schedulerName") == ("gpu-advisor" if routed else scheduler)


@pytest.mark.parametrize(("row", "scheduler"), CASES, ids=IDS)
def test_the_safety_net_refuses_only_advisor_counted_shares_on_other_schedulers(
    installed: dict[str, Doc], row: Row, scheduler: str | None
) -> None:
    p = with_scheduler(row, scheduler)
    counts = scheduler in ("gpu-advisor", "hami-scheduler")
    verdict = evaluate(installed["ValidatingAdmissionPolicy"], CREATE, {}, p)
    assert verdict.applies is row.advisor_only
    assert verdict.allowed is (not row.advisor_only or counts)
    for message in verdict.denials:
        assert f"its scheduler {scheduler or 'default-scheduler'} is not one that does" in message
        assert "set spec.schedulerName: gpu-advisor" in message and "gpu-advisor.io/routing=off" in message
    # Validation runs after every mutation: routed, only a share that names another scheduler is refused.
    routed = mutate(installed["MutatingAdmissionPolicy"], p)
    refused = row.advisor_only and scheduler == "volcano"
    assert evaluate(installed["ValidatingAdmissionPolicy"], CREATE, {}, routed).allowed is not refused


@pytest.mark.parametrize(
    ("namespace", "labels", "routed"),
    [
        ({"kubernetes.io/metadata.name": "ml"}, {}, True),
        ({"kubernetes.io/metadata.name": "ml", "gpu-advisor.io/routing": "off"}, {}, False),
        ({"kubernetes.io/metadata.name": "ml"}, {"gpu-advisor.io/routing": "off"}, False),
        ({"kubernetes.io/metadata.name": "ml", "gpu-advisor.io/routing": "on"}, {"app": "x"}, True),
        ({"kubernetes.io/metadata.name": "kube-system"}, {}, False),
        ({"kubernetes.io/metadata.name": "gpu-advisor"}, {}, False),
    ],
    ids=["plain", "namespace-off", "pod-off", "other-labels", "kube-system", "own-namespace"],
)
def test_routing_is_opted_out_by_label_on_the_namespace_or_the_pod(
    installed: dict[str, Doc], namespace: dict[str, str], labels: dict[str, str], routed: bool
) -> None:
    match: Any = installed["MutatingAdmissionPolicy"]["spec"]["matchConstraints"]
    assert (selects(match["namespaceSelector"], namespace) and selects(match["objectSelector"], labels)) is routed
    # The safety net has no routing opt-out: a namespace out of routing is where it matters most.
    net = installed["ValidatingAdmissionPolicy"]["spec"]["matchConstraints"]
    assert selects(net["namespaceSelector"], namespace) is (namespace["kubernetes.io/metadata.name"] == "ml")
    assert "objectSelector" not in net


def test_a_share_in_a_namespace_out_of_routing_is_refused_with_the_fix() -> None:
    share = pod(annotations={"alibabacloud.com/gpu-milli": "250", "alibabacloud.com/gpu-count": "1"})
    (policy,) = [d for d in yaml.safe_load_all(SHIPPED.read_text()) if d["kind"] == "ValidatingAdmissionPolicy"]
    (message,) = evaluate(policy, CREATE, {}, share).denials
    assert message.startswith("this pod asks a GPU share kube-scheduler does not count")
    assert "its scheduler default-scheduler is not one that does" in message
