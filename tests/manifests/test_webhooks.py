"""The webhook configurations reach the right namespaces and objects, on paths the advisor serves."""

from __future__ import annotations

from typing import Any

import pytest

from tests.manifests.rendering import find


def webhooks(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [w for d in docs if d["kind"].endswith("WebhookConfiguration") for w in d["webhooks"]]


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    for expr in selector.get("matchExpressions", []):
        have = labels.get(expr["key"])
        if expr["operator"] == "In" and have not in expr["values"]:
            return False
        if expr["operator"] == "NotIn" and have in expr["values"]:
            return False
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def test_webhooks_fail_open_fast_and_without_side_effects(rendered: list[dict[str, Any]]) -> None:
    hooks = webhooks(rendered)
    assert {w["name"] for w in hooks} == {"advice.gpu-advisor.io", "warn.gpu-advisor.io", "enforce.gpu-advisor.io"}
    for w in hooks:
        assert w["failurePolicy"] == "Ignore" and w["timeoutSeconds"] <= 3
        assert w["sideEffects"] == "None" and w["admissionReviewVersions"] == ["v1"]
        kinds = {r for rule in w["rules"] for r in rule["resources"]}
        assert kinds == {"pods", "deployments", "statefulsets", "daemonsets", "replicasets", "jobs", "cronjobs"}


@pytest.mark.parametrize(
    ("labels", "reached"),
    [
        ({"kubernetes.io/metadata.name": "ml"}, {"advice.gpu-advisor.io", "warn.gpu-advisor.io"}),
        (
            {"kubernetes.io/metadata.name": "ml", "gpu-advisor.io/admission": "warn"},
            {"advice.gpu-advisor.io", "warn.gpu-advisor.io"},
        ),
        (
            {"kubernetes.io/metadata.name": "ml", "gpu-advisor.io/admission": "enforce"},
            {"advice.gpu-advisor.io", "enforce.gpu-advisor.io"},
        ),
        ({"kubernetes.io/metadata.name": "ml", "gpu-advisor.io/admission": "off"}, set()),
        ({"kubernetes.io/metadata.name": "kube-system"}, set()),
        ({"kubernetes.io/metadata.name": "gpu-advisor"}, set()),
    ],
    ids=["no-label", "warn", "enforce", "off", "kube-system", "own-namespace"],
)
def test_each_namespace_reaches_the_endpoints_its_label_asks_for(
    rendered: list[dict[str, Any]], labels: dict[str, str], reached: set[str]
) -> None:
    assert {w["name"] for w in webhooks(rendered) if selects(w["namespaceSelector"], labels)} == reached


@pytest.mark.parametrize(
    ("obj", "sent"),
    [
        (
            {"kind": "Pod", "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}},
            True,
        ),
        (
            {
                "kind": "Pod",
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}, {"name": "d"}]},
            },
            False,
        ),
        (
            {
                "kind": "Deployment",
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/mig-1g.5gb": "1"}}}]
                        }
                    }
                },
            },
            True,
        ),
        (
            {
                "kind": "CronJob",
                "spec": {
                    "jobTemplate": {
                        "spec": {
                            "template": {
                                "spec": {
                                    "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]
                                }
                            }
                        }
                    }
                },
            },
            True,
        ),
        ({"kind": "Job", "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}, False),
    ],
    ids=["gpu-pod", "cpu-pod", "mig-deployment", "gpu-cronjob", "plain-job"],
)
def test_match_conditions_send_only_objects_that_ask_for_nvidia_resources(
    rendered: list[dict[str, Any]], obj: dict[str, Any], sent: bool
) -> None:
    import celpy
    from celpy.adapter import json_to_cel

    env = celpy.Environment()
    for hook in webhooks(rendered):
        (condition,) = hook["matchConditions"]
        program = env.program(env.compile(condition["expression"]))
        assert bool(program.evaluate({"object": json_to_cel(obj)})) is sent, hook["name"]


def test_the_webhook_paths_are_served_over_the_service_port(rendered: list[dict[str, Any]], api) -> None:  # type: ignore[no-untyped-def]
    service = find(rendered, "Service", "gpu-advisor")
    https = next(p for p in service["spec"]["ports"] if p["name"] == "https")
    container = find(rendered, "Deployment", "gpu-advisor")["spec"]["template"]["spec"]["containers"][0]
    assert https["port"] == 443 and "--tls-port=8443" in container["args"]
    for hook in webhooks(rendered):
        path = hook["clientConfig"]["service"]["path"]
        assert hook["clientConfig"]["service"]["port"] == 443
        assert api.post(path, content=b"{}", headers={"Content-Type": "application/json"}).status_code == 400
