"""The Helm chart: lint-clean, rendered by Helm's own library for each supported setup and Kubernetes
version, every object accepted by its schema, and the same install as kustomize's for default values."""

from __future__ import annotations

import copy
import re
from importlib.metadata import version
from typing import Any

import pytest
import yaml
from helm_python import HelmValuesError

from tests.manifests.rendering import Doc
from tests.manifests.rendering import render as kustomize
from tests.operate.chart import CHART, lint, notes, render, validate

KUBE_VERSIONS = ["v1.30.4", "v1.36.0"]
ROUTING_POLICY_API = "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"
MONITORING = ("monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PodMonitor")
SETUPS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "cert-manager": {"certificates": {"mode": "cert-manager"}},
    "cert-manager with a ClusterIssuer": {
        "certificates": {
            "mode": "cert-manager",
            "certManager": {"issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer"}},
        }
    },
    "built-in certificates": {"certificates": {"mode": "job"}},
    "agent off": {"agent": {"enabled": False}, "namespace": {"create": True}},
    "scheduler off": {"scheduler": {"enabled": False}},
    "enforce by default": {"admission": {"defaultMode": "enforce"}},
    "admission off by default": {"admission": {"defaultMode": "off"}},
    "API behind access review": {"advisor": {"apiAuth": "access-review"}},
    "everything set": {
        "image": {"tag": "0.1.1", "digest": "sha256:" + "ab" * 32},
        "advisor": {"prometheusUrl": "http://prometheus-operated.monitoring.svc:9090", "routeGpuPodsTo": "gpu-advisor"},
        "namespace": {"create": True},
    },
}
CASES = [(setup, kube) for setup in SETUPS for kube in KUBE_VERSIONS]
IDS = [f"{setup} on {kube}" for setup, kube in CASES]


def kinds(docs: list[Doc]) -> set[tuple[str, str]]:
    return {(d["kind"], d["metadata"]["name"]) for d in docs}


def one(docs: list[Doc], kind: str, name: str) -> Doc:
    (doc,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


@pytest.mark.parametrize(("setup", "kube"), CASES, ids=IDS)
def test_the_chart_lints_clean(setup: str, kube: str) -> None:
    report = lint(SETUPS[setup], kube)
    assert report["errors"] == []
    # severity 1 is INFO ("icon is recommended": the project has no icon); 2 warning, 3 error
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize(("setup", "kube"), CASES, ids=IDS)
def test_every_rendered_object_fits_its_schema(setup: str, kube: str) -> None:
    docs = render(SETUPS[setup], kube, MONITORING)
    assert len(docs) > 10
    for doc in docs:
        validate(doc, kube)


def test_the_schema_check_refuses_a_field_kubernetes_does_not_know() -> None:
    deployment = copy.deepcopy(one(render(), "Deployment", "gpu-advisor"))
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolice"] = "Always"
    with pytest.raises(Exception, match="imagePullPolice"):
        validate(deployment, "v1.36.0")
    certificate = copy.deepcopy(one(render(SETUPS["cert-manager"]), "Certificate", "gpu-advisor-serving"))
    certificate["spec"]["dnsName"] = ["typo"]
    with pytest.raises(AssertionError, match="fields its CRD does not know"):
        validate(certificate, "v1.36.0")


@pytest.mark.parametrize(
    "values", [{"admission": {"defaultMode": "loud"}}, {"certificates": {"mode": "vault"}}, {"replicas": 3}]
)
def test_values_outside_the_schema_are_refused(values: dict[str, Any]) -> None:
    with pytest.raises(HelmValuesError):
        render(values)


@pytest.mark.parametrize(
    ("kube", "image"),
    [
        ("v1.30.4", "registry.k8s.io/kube-scheduler:v1.30.4"),
        ("v1.36.0", "registry.k8s.io/kube-scheduler:v1.36.0"),
        ("v1.31.2-eks-a737599", "registry.k8s.io/kube-scheduler:v1.31.2"),  # provider suffixes dropped
        ("v1.33.1+k3s1", "registry.k8s.io/kube-scheduler:v1.33.1"),
    ],
)
def test_the_second_scheduler_runs_the_clusters_own_version(kube: str, image: str) -> None:
    deployment = one(render({}, kube), "Deployment", "gpu-advisor-scheduler")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == image


def test_a_pinned_scheduler_tag_wins_over_the_clusters_version() -> None:
    docs = render({"scheduler": {"image": {"tag": "v1.30.9"}}}, "v1.30.4")
    image = one(docs, "Deployment", "gpu-advisor-scheduler")["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "registry.k8s.io/kube-scheduler:v1.30.9"


def test_the_image_defaults_to_the_chart_version_and_is_pulled_by_digest_when_pinned() -> None:
    default = one(render(), "Deployment", "gpu-advisor")["spec"]["template"]["spec"]["containers"][0]["image"]
    assert default == f"ghcr.io/gpu-advisor/gpu-advisor:{version('gpu-advisor')}"
    pinned = render(SETUPS["everything set"])
    for kind, name in [("Deployment", "gpu-advisor"), ("DaemonSet", "gpu-advisor-agent"), ("Job", "gpu-advisor-certs")]:
        image = one(pinned, kind, name)["spec"]["template"]["spec"]["containers"][0]["image"]
        assert image == "ghcr.io/gpu-advisor/gpu-advisor:0.1.1@sha256:" + "ab" * 32


def test_chart_package_and_kustomize_name_one_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    labels = yaml.safe_load((CHART.parent.parent / "kustomization.yaml").read_text())["labels"][0]["pairs"]
    assert chart["appVersion"] == chart["version"] == labels["app.kubernetes.io/version"] == version("gpu-advisor")


COMPONENTS = {"gpu-advisor", "gpu-advisor-agent", "gpu-advisor-scheduler", "gpu-advisor-certs"}


@pytest.mark.parametrize("setup", SETUPS)
def test_every_object_carries_the_recommended_labels(setup: str) -> None:
    for doc in render(SETUPS[setup], "v1.36.0", MONITORING):
        labels = doc["metadata"]["labels"]
        assert labels.get("app.kubernetes.io/name") in COMPONENTS, (doc["kind"], doc["metadata"]["name"])
        assert labels["app.kubernetes.io/part-of"] == "gpu-advisor"
        assert labels["app.kubernetes.io/instance"] == "gpu-advisor"
        assert labels["app.kubernetes.io/version"] == version("gpu-advisor")
        assert labels["app.kubernetes.io/managed-by"] == "Helm"


def test_cert_manager_issues_the_secret_the_advisor_mounts_and_injects_the_ca() -> None:
    docs = render(SETUPS["cert-manager"])
    serving = one(docs, "Certificate", "gpu-advisor-serving")
    assert serving["spec"]["secretName"] == "gpu-advisor-tls"
    assert serving["spec"]["dnsNames"][2] == "gpu-advisor.gpu-advisor.svc"
    assert serving["spec"]["issuerRef"] == {"name": "gpu-advisor-ca", "kind": "Issuer"}
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        annotations = one(docs, kind, "gpu-advisor")["metadata"]["annotations"]
        assert annotations == {"cert-manager.io/inject-ca-from": "gpu-advisor/gpu-advisor-serving"}
    assert not {"Job", "CronJob"} & {d["kind"] for d in docs}
    corp = render(SETUPS["cert-manager with a ClusterIssuer"])
    assert one(corp, "Certificate", "gpu-advisor-serving")["spec"]["issuerRef"] == {
        "name": "corp-ca",
        "kind": "ClusterIssuer",
    }
    assert not [d for d in corp if d["kind"] == "Issuer"], "no self-signed CA when an issuer is given"


def test_built_in_certificates_run_at_install_and_upgrade_and_renew_daily() -> None:
    docs = render()
    job = one(docs, "Job", "gpu-advisor-certs")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"
    assert job["spec"]["template"]["spec"]["containers"][0]["args"][:2] == ["certs", "ensure"]
    cron = one(docs, "CronJob", "gpu-advisor-certs")
    assert cron["spec"]["schedule"] == "17 3 * * *"
    assert cron["spec"]["jobTemplate"]["spec"]["template"] == job["spec"]["template"]
    role = one(docs, "ClusterRole", "gpu-advisor-certs")
    assert role["rules"] == [
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
            "resourceNames": ["gpu-advisor"],
            "verbs": ["get", "patch"],
        }
    ]


def test_the_advisor_mounts_only_the_serving_pair_and_the_ca_certificate_never_the_ca_key() -> None:
    for docs in (render(), kustomize()):
        volume = one(docs, "Deployment", "gpu-advisor")["spec"]["template"]["spec"]["volumes"][0]
        assert [item["key"] for item in volume["secret"]["items"]] == ["tls.crt", "tls.key", "ca.crt"]


@pytest.mark.parametrize("mode", ["job", "cert-manager"])
def test_kube_scheduler_mounts_its_client_pair_where_its_extender_tls_config_reads_it(mode: str) -> None:
    docs = render({"certificates": {"mode": mode}})
    spec = one(docs, "Deployment", "gpu-advisor-scheduler")["spec"]["template"]["spec"]
    (volume,) = [v for v in spec["volumes"] if v["name"] == "advisor-client"]
    (mount,) = [m for m in spec["containers"][0]["volumeMounts"] if m["name"] == "advisor-client"]
    config = yaml.safe_load(one(docs, "ConfigMap", "gpu-advisor-scheduler-config")["data"]["config.yaml"])
    tls = config["extenders"][0]["tlsConfig"]
    files = {f"{mount['mountPath']}/{item['path']}" for item in volume["secret"]["items"]}
    assert {tls["caFile"], tls["certFile"], tls["keyFile"]} == files
    assert "ca.key" not in {item["key"] for item in volume["secret"]["items"]}


def selector(docs: list[Doc], kind: str, hook: str) -> dict[str, Any]:
    (webhook,) = [w for w in one(docs, kind, "gpu-advisor")["webhooks"] if w["name"] == hook]
    excluded, label = webhook["namespaceSelector"]["matchExpressions"]
    assert excluded["values"] == ["kube-system", "gpu-advisor"]
    assert label["key"] == "gpu-advisor.io/admission"
    return {"operator": label["operator"], "values": label["values"]}


@pytest.mark.parametrize(
    ("mode", "advice", "warn", "enforce"),
    [
        # An unlabelled namespace is matched by NotIn, never by In: exactly one validating hook sees it.
        ("warn", ("NotIn", ["off"]), ("NotIn", ["off", "enforce"]), ("In", ["enforce"])),
        ("enforce", ("NotIn", ["off"]), ("In", ["warn"]), ("NotIn", ["off", "warn"])),
        ("off", ("In", ["warn", "enforce"]), ("In", ["warn"]), ("In", ["enforce"])),
    ],
)
def test_the_default_admission_mode_is_what_unlabelled_namespaces_get(
    mode: str, advice: tuple[str, list[str]], warn: tuple[str, list[str]], enforce: tuple[str, list[str]]
) -> None:
    docs = render({"admission": {"defaultMode": mode}})
    for (kind, hook), (operator, values) in {
        ("MutatingWebhookConfiguration", "advice.gpu-advisor.io"): advice,
        ("ValidatingWebhookConfiguration", "warn.gpu-advisor.io"): warn,
        ("ValidatingWebhookConfiguration", "enforce.gpu-advisor.io"): enforce,
    }.items():
        assert selector(docs, kind, hook) == {"operator": operator, "values": values}


def test_service_and_pod_monitors_only_where_the_prometheus_operator_is_installed() -> None:
    assert not {"ServiceMonitor", "PodMonitor"} & {d["kind"] for d in render()}
    docs = render({}, "v1.36.0", MONITORING)
    assert one(docs, "ServiceMonitor", "gpu-advisor")["spec"]["endpoints"][0]["port"] == "http"
    assert one(docs, "PodMonitor", "gpu-advisor-agent")["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"
    assert not [d for d in render({"agent": {"enabled": False}}, "v1.36.0", MONITORING) if d["kind"] == "PodMonitor"]


def test_the_dashboard_config_map_is_labelled_for_grafanas_sidecar() -> None:
    dashboard = one(render(), "ConfigMap", "gpu-advisor-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["data"]["gpu-advisor.json"] == (CHART / "dashboards" / "gpu-advisor.json").read_text()


@pytest.mark.parametrize(("agent", "level"), [(True, "privileged"), (False, "restricted")])
def test_the_namespace_enforces_the_strictest_pod_security_level_the_install_meets(agent: bool, level: str) -> None:
    docs = render({"namespace": {"create": True}, "agent": {"enabled": agent}})
    labels = one(docs, "Namespace", "gpu-advisor")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == level


def pod_specs(docs: list[Doc]) -> dict[str, Doc]:
    specs = {}
    for doc in docs:
        spec = doc.get("spec", {})
        template = spec.get("jobTemplate", {}).get("spec", spec).get("template")
        if template:
            specs[f"{doc['kind']}/{doc['metadata']['name']}"] = template["spec"]
    return specs


@pytest.mark.parametrize("source", ["chart", "kustomize"])
def test_every_pod_but_the_agent_meets_the_restricted_pod_security_standard(source: str) -> None:
    docs = render() if source == "chart" else kustomize()
    specs = pod_specs(docs)
    assert "DaemonSet/gpu-advisor-agent" in specs and len(specs) == 5
    for name, spec in specs.items():
        if name == "DaemonSet/gpu-advisor-agent":
            continue
        # The restricted profile's checks, as the Pod Security admission controller makes them:
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert not any(k in spec for k in ("hostNetwork", "hostPID", "hostIPC")), name
        assert all(set(v) <= {"name", "configMap", "secret", "emptyDir", "projected"} for v in spec.get("volumes", []))
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False, name
            assert context["capabilities"] == {"drop": ["ALL"]}, name
            assert "ports" not in container or all("hostPort" not in p for p in container["ports"]), name


HASH = re.compile(r"-[a-z0-9]{10}$")  # kustomize's configMapGenerator suffix


def identities(docs: list[Doc]) -> set[tuple[str, str, str]]:
    out = set()
    for doc in docs:
        name = doc["metadata"]["name"]
        if doc["kind"] == "ConfigMap":
            name = HASH.sub("", name)
        out.add((doc["kind"], doc["metadata"].get("namespace", ""), name))
    return out


def test_kustomize_and_the_chart_install_the_same_objects() -> None:
    kustomized = identities(kustomize())
    # kustomize ships the routing policy, which the chart renders where the API server serves it (1.36).
    served = identities(render(api_versions=(ROUTING_POLICY_API,)))
    # Helm installs into a namespace made beforehand (as the GPU Operator's chart does) ...
    assert kustomized - served == {("Namespace", "", "gpu-advisor")}
    assert served - kustomized == set()
    # ... or renders it too: then the two are the same set.
    created = render({"namespace": {"create": True}}, api_versions=(ROUTING_POLICY_API,))
    assert identities(created) == kustomized


def test_kustomize_and_the_chart_configure_the_scheduler_and_the_webhooks_alike() -> None:
    chart, kustomized = render(api_versions=(ROUTING_POLICY_API,)), kustomize()
    config = yaml.safe_load(one(chart, "ConfigMap", "gpu-advisor-scheduler-config")["data"]["config.yaml"])
    (generated,) = [d for d in kustomized if d["kind"] == "ConfigMap" and "scheduler-config" in d["metadata"]["name"]]
    assert config == yaml.safe_load(generated["data"]["config.yaml"])
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert one(chart, kind, "gpu-advisor")["webhooks"] == one(kustomized, kind, "gpu-advisor")["webhooks"]
    for policy in (
        ("ValidatingAdmissionPolicy", "gpu-advisor-agent-own-node-annotations"),
        ("ValidatingAdmissionPolicy", "gpu-advisor-safety-net"),
        ("ValidatingAdmissionPolicyBinding", "gpu-advisor-safety-net"),
        ("MutatingAdmissionPolicy", "gpu-advisor-routing"),
        ("MutatingAdmissionPolicyBinding", "gpu-advisor-routing"),
    ):
        assert spaced(one(chart, *policy)["spec"]) == spaced(one(kustomized, *policy)["spec"]), policy


def spaced(value: Any) -> Any:
    """Whitespace runs as one space: kustomize re-emits a folded CEL expression with one more blank line
    (before a more-indented line), which CEL, like any expression language, does not see."""
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, list):
        return [spaced(v) for v in value]
    if isinstance(value, dict):
        return {k: spaced(v) for k, v in value.items()}
    return value


def test_the_notes_say_how_to_verify_the_install() -> None:
    text = notes()
    assert "kubectl -n gpu-advisor rollout status deployment/gpu-advisor" in text
    assert "kubectl -n gpu-advisor logs job/gpu-advisor-certs" in text
    assert "curl -s localhost:8080/readyz" in text


@pytest.mark.parametrize(
    ("api_auth", "flag", "allowed"),
    [
        ("", None, None),
        ("token", "--api-auth", {"tokenreviews"}),
        ("access-review", "--api-access-review", {"tokenreviews", "subjectaccessreviews"}),
    ],
)
def test_api_auth_passes_its_flag_and_grants_only_the_reviews_it_makes(
    api_auth: str, flag: str | None, allowed: set[str] | None
) -> None:
    docs = render({"advisor": {"apiAuth": api_auth}})
    args = one(docs, "Deployment", "gpu-advisor")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert [a for a in args if a.startswith("--api-")] == ([flag] if flag else [])
    roles = [d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "gpu-advisor-api-auth"]
    if allowed is None:
        assert roles == []
        return
    (role,) = roles
    assert {r for rule in role["rules"] for r in rule["resources"]} == allowed
    assert all(rule["verbs"] == ["create"] for rule in role["rules"])
    binding = one(docs, "ClusterRoleBinding", "gpu-advisor-api-auth")
    assert binding["subjects"][0]["name"] == "gpu-advisor"
