"""The NetworkPolicies let in exactly the callers each port is for, on ports the pods really serve."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from tests.manifests.network import Pod, allowed, ingress_policies
from tests.manifests.rendering import MANIFESTS, Doc, find, workloads
from tests.manifests.rendering import render as kustomize
from tests.operate.chart import render as chart

NS = "gpu-advisor"
ADVISOR = Pod(NS, {"app.kubernetes.io/name": "gpu-advisor"})
AGENT = Pod(NS, {"app.kubernetes.io/name": "gpu-advisor-agent"})
SCHEDULER = Pod(NS, {"app.kubernetes.io/name": "gpu-advisor-scheduler"})
KUBE_SCHEDULER = Pod("kube-system", {"component": "kube-scheduler", "tier": "control-plane"})
PROMETHEUS = Pod("monitoring", {"app.kubernetes.io/name": "prometheus", "prometheus": "k8s"})
ANY_POD = Pod("ml", {"app": "notebook"})
# A pod that borrows Prometheus' label in a namespace its owner controls.
FAKE_PROMETHEUS = Pod("ml", {"app.kubernetes.io/name": "prometheus"})
# Another namespace that copies the advisor's label on its own pods.
FAKE_SCHEDULER = Pod("ml", {"app.kubernetes.io/name": "gpu-advisor-scheduler"})


def container_ports(rendered: list[Doc], pod: Pod) -> dict[str, int]:
    (workload,) = [w for w in workloads(rendered) if w["spec"]["template"]["metadata"]["labels"] == {**pod.labels}]
    return {
        p["name"]: p["containerPort"]
        for c in workload["spec"]["template"]["spec"]["containers"]
        for p in c.get("ports", [])
    }


def test_every_pod_of_the_install_is_selected_by_exactly_one_ingress_policy(rendered: list[Doc]) -> None:
    for workload in workloads(rendered):
        labels = workload["spec"]["template"]["metadata"]["labels"]
        pod = Pod(workload["metadata"]["namespace"], labels)
        assert len(ingress_policies(rendered, pod)) == 1, workload["metadata"]["name"]


def test_every_port_a_policy_names_is_a_port_its_pods_serve(rendered: list[Doc]) -> None:
    for policy in (d for d in rendered if d["kind"] == "NetworkPolicy"):
        labels = policy["spec"]["podSelector"]["matchLabels"]
        served = container_ports(rendered, Pod(NS, labels))
        for rule in policy["spec"]["ingress"]:
            for port in rule["ports"]:
                assert port["port"] in served, (policy["metadata"]["name"], port)


@pytest.mark.parametrize(
    ("source", "target", "port", "expected"),
    [
        # The extender port (HTTPS, a client certificate besides): the schedulers only.
        (SCHEDULER, ADVISOR, "extender", True),
        (KUBE_SCHEDULER, ADVISOR, "extender", True),
        (PROMETHEUS, ADVISOR, "extender", False),
        (ANY_POD, ADVISOR, "extender", False),
        (FAKE_SCHEDULER, ADVISOR, "extender", False),
        # The advisor's plain port: /metrics, and /v1/* (which lists GPU pods and UUIDs); no extender verb.
        (SCHEDULER, ADVISOR, "http", False),
        (KUBE_SCHEDULER, ADVISOR, "http", False),
        (PROMETHEUS, ADVISOR, "http", True),
        (ANY_POD, ADVISOR, "http", False),
        (FAKE_PROMETHEUS, ADVISOR, "http", False),
        (FAKE_SCHEDULER, ADVISOR, "http", False),
        (AGENT, ADVISOR, "http", False),
        # The webhook port: the API server is no pod, so no selector can name it; open to any source.
        (ANY_POD, ADVISOR, "https", True),
        # The agent's metrics: Prometheus, and the advisor with --scrape-agents.
        (PROMETHEUS, AGENT, "metrics", True),
        (ADVISOR, AGENT, "metrics", True),
        (ANY_POD, AGENT, "metrics", False),
        (FAKE_PROMETHEUS, AGENT, "metrics", False),
        (SCHEDULER, AGENT, "metrics", False),
        # kube-scheduler's secure port (health and metrics): Prometheus only.
        (PROMETHEUS, SCHEDULER, "https", True),
        (ANY_POD, SCHEDULER, "https", False),
        (ADVISOR, SCHEDULER, "https", False),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_who_may_reach_which_port(rendered: list[Doc], source: Pod, target: Pod, port: str, expected: bool) -> None:
    assert allowed(rendered, source, target, port) is expected


def test_the_scheduler_reaches_the_extender_on_the_port_its_config_calls(rendered: list[Doc]) -> None:
    config = yaml.safe_load(next(iter(find(rendered, "ConfigMap", "gpu-advisor-scheduler-config")["data"].values())))
    url = urlsplit(config["extenders"][0]["urlPrefix"])
    service = find(rendered, "Service", "gpu-advisor")
    (service_port,) = [p for p in service["spec"]["ports"] if p["port"] == url.port]
    target_port = service_port["targetPort"]
    assert container_ports(rendered, ADVISOR)[target_port] == 8444
    assert allowed(rendered, SCHEDULER, ADVISOR, target_port)
    assert not allowed(rendered, ANY_POD, ADVISOR, target_port)


def test_the_api_server_reaches_the_webhooks_on_the_port_they_name(rendered: list[Doc]) -> None:
    service = find(rendered, "Service", "gpu-advisor")
    hooks = [w for d in rendered if d["kind"].endswith("WebhookConfiguration") for w in d["webhooks"]]
    for hook in hooks:
        port = hook["clientConfig"]["service"]["port"]
        (service_port,) = [p for p in service["spec"]["ports"] if p["port"] == port]
        assert container_ports(rendered, ADVISOR)[service_port["targetPort"]] == 8443
        # Any source, the API server included: it calls from a control-plane address, not a pod.
        assert allowed(rendered, Pod("", {}), ADVISOR, service_port["targetPort"])


def test_the_agent_serves_metrics_where_the_advisor_scrapes_them(rendered: list[Doc]) -> None:
    daemonset = find(rendered, "DaemonSet", "gpu-advisor-agent")
    (container,) = daemonset["spec"]["template"]["spec"]["containers"]
    assert "--port=9401" in container["args"]
    assert container_ports(rendered, AGENT) == {"metrics": 9401}


# kubeadm's kube-scheduler: a static pod on the host network of a control-plane node at 10.0.0.5.
HOST_SCHEDULER = Pod("kube-system", {"component": "kube-scheduler", "tier": "control-plane"}, host_ip="10.0.0.5")
ELSEWHERE = Pod("kube-system", {"component": "kube-scheduler"}, host_ip="10.0.1.5")


def with_component(tmp_path: Path, component: str, cidr: str) -> list[Doc]:
    """manifests/ with one of its components listed and its CIDR set, as the docs tell a user to."""
    copy = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, copy)
    kustomization = copy / "kustomization.yaml"
    text = kustomization.read_text()
    assert f"# components:\n#   - components/{component}\n" in text, "the commented entry the docs name"
    kustomization.write_text(
        text.replace(f"# components:\n#   - components/{component}\n", f"components:\n  - components/{component}\n")
    )
    patch = copy / "components" / component / "kustomization.yaml"
    patch.write_text(patch.read_text().replace("cidr: 10.0.0.0/24", f"cidr: {cidr}"))
    return kustomize(copy)


def test_a_host_network_scheduler_is_refused_by_default(rendered: list[Doc]) -> None:
    assert not allowed(rendered, HOST_SCHEDULER, ADVISOR, "extender")
    assert not allowed(chart(), HOST_SCHEDULER, ADVISOR, "extender")


def test_the_chart_admits_a_host_network_scheduler_by_its_nodes_cidr() -> None:
    docs = chart({"scheduler": {"enabled": False, "hostNetworkCidrs": ["10.0.0.0/24"]}})
    assert allowed(docs, HOST_SCHEDULER, ADVISOR, "extender")
    assert not allowed(docs, ELSEWHERE, ADVISOR, "extender")
    assert allowed(docs, KUBE_SCHEDULER, ADVISOR, "extender"), "the selectors stay"
    assert not allowed(docs, ANY_POD, ADVISOR, "extender"), "the CIDR admits addresses, not every pod"


def test_the_kustomize_component_admits_the_same_as_the_chart_value(tmp_path: Path) -> None:
    docs = with_component(tmp_path, "host-network-scheduler", "10.0.0.0/24")
    assert allowed(docs, HOST_SCHEDULER, ADVISOR, "extender") and not allowed(docs, ELSEWHERE, ADVISOR, "extender")
    chart_policy = find(chart({"scheduler": {"hostNetworkCidrs": ["10.0.0.0/24"]}}), "NetworkPolicy", "gpu-advisor")
    assert find(docs, "NetworkPolicy", "gpu-advisor")["spec"] == chart_policy["spec"]
