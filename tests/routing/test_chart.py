"""The chart's routing: the policy where the API server serves it, the webhook's routing where it does not
(or when asked), the safety net in both, and each value where it belongs."""

from __future__ import annotations

from typing import Any

import pytest
from helm_python import HelmValuesError

from tests.manifests.rendering import Doc
from tests.operate.chart import render, validate

SERVED = ("admissionregistration.k8s.io/v1/MutatingAdmissionPolicy",)


def kinds(docs: list[Doc]) -> set[str]:
    return {d["kind"] for d in docs if "AdmissionPolicy" in d["kind"] and "agent" not in d["metadata"]["name"]}


def route_flag(docs: list[Doc]) -> list[str]:
    (advisor,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "gpu-advisor"]
    args: list[str] = advisor["spec"]["template"]["spec"]["containers"][0]["args"]
    return [a for a in args if a.startswith("--route-gpu-pods-to")]


POLICY = {"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}
NET = {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}


@pytest.mark.parametrize(
    ("values", "kube", "apis", "policies", "flag"),
    [
        ({}, "v1.36.0", SERVED, POLICY | NET, []),
        # An API server without MutatingAdmissionPolicy v1: the webhook routes (it fails open).
        ({}, "v1.30.4", (), NET, ["--route-gpu-pods-to=gpu-advisor"]),
        ({"routing": {"mode": "webhook"}}, "v1.36.0", SERVED, NET, ["--route-gpu-pods-to=gpu-advisor"]),
        ({"routing": {"mode": "policy"}}, "v1.36.0", (), POLICY | NET, []),
        ({"routing": {"enabled": False}}, "v1.36.0", SERVED, NET, []),
        ({"routing": {"enabled": False}, "safetyNet": {"enabled": False}}, "v1.30.4", (), set(), []),
        # An explicit advisor.routeGpuPodsTo is kept, policy or not.
        ({"advisor": {"routeGpuPodsTo": "gpu-advisor"}}, "v1.36.0", SERVED, POLICY | NET,
         ["--route-gpu-pods-to=gpu-advisor"]),
    ],
    ids=["policy where served", "webhook on 1.30", "webhook asked", "policy asked", "routing off", "all off",
         "explicit flag"],
)  # fmt: skip
def test_routing_by_policy_where_served_else_by_the_webhook(
    values: dict[str, Any], kube: str, apis: tuple[str, ...], policies: set[str], flag: list[str]
) -> None:
    docs = render(values, kube, apis)
    assert kinds(docs) == policies
    assert route_flag(docs) == flag
    for doc in docs:
        if "AdmissionPolicy" in doc["kind"]:
            validate(doc, kube)


def test_the_values_reach_the_policies() -> None:
    values = {
        "routing": {"scheduler": "gpu-sched", "optOutLabel": "example.com/no-route"},
        "safetyNet": {"validationActions": ["Warn", "Audit"], "schedulers": ["hami-scheduler"]},
        "admission": {"excludedNamespaces": ["kube-system", "batch-system"]},
    }
    docs = {d["kind"]: d["spec"] for d in render(values, "v1.36.0", SERVED) if "safety" in d["metadata"]["name"]
            or "routing" in d["metadata"]["name"]}  # fmt: skip
    route = docs["MutatingAdmissionPolicy"]
    assert route["variables"] == [{"name": "scheduler", "expression": '"gpu-sched"'}]
    off = {"key": "example.com/no-route", "operator": "NotIn", "values": ["off"]}
    names = {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
             "values": ["kube-system", "batch-system", "gpu-advisor"]}  # fmt: skip
    assert route["matchConstraints"]["namespaceSelector"]["matchExpressions"] == [names, off]
    assert route["matchConstraints"]["objectSelector"]["matchExpressions"] == [off]
    net = docs["ValidatingAdmissionPolicy"]
    # The routing profile first: the refusal names it.
    assert net["variables"][0] == {"name": "schedulers", "expression": '["gpu-sched","hami-scheduler"]'}
    assert net["matchConstraints"]["namespaceSelector"]["matchExpressions"] == [names]
    assert docs["ValidatingAdmissionPolicyBinding"]["validationActions"] == ["Warn", "Audit"]


@pytest.mark.parametrize(
    "values",
    [
        {"safetyNet": {"validationActions": ["Deny", "Warn"]}},
        {"safetyNet": {"validationActions": []}},
        {"routing": {"mode": "sometimes"}},
        {"routing": {"scheduler": "Not A Name"}},
        {"safetyNet": {"schedulers": ["ok", ""]}},
    ],
    ids=["deny-and-warn", "no-action", "unknown-mode", "bad-scheduler", "empty-scheduler"],
)
def test_routing_values_outside_the_schema_are_refused(values: dict[str, Any]) -> None:
    with pytest.raises(HelmValuesError):
        render(values)
