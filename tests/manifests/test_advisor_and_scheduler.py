"""The advisor and its kube-scheduler profile point at each other, and the advisor only reads."""

from __future__ import annotations

from typing import Any

import yaml

from tests.manifests.rendering import find


def test_the_scheduler_profile_calls_the_advisor_service_on_routes_that_exist(rendered: list[dict[str, Any]]) -> None:
    config = yaml.safe_load(next(iter(find(rendered, "ConfigMap", "gpu-advisor-scheduler-config")["data"].values())))
    assert config["kind"] == "KubeSchedulerConfiguration" and config["profiles"][0]["schedulerName"] == "gpu-advisor"
    (extender,) = config["extenders"]
    service = find(rendered, "Service", "gpu-advisor")
    (port,) = [p["port"] for p in service["spec"]["ports"] if p["name"] == "extender"]
    name = f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
    assert extender["urlPrefix"] == f"https://{name}:{port}/scheduler"
    # Over HTTPS with kube-scheduler's client certificate, the advisor's checked for the Service's name.
    assert extender["enableHTTPS"] is True and extender["tlsConfig"]["serverName"] == name
    assert service["spec"]["sessionAffinity"] == "ClientIP"  # one pod's calls reach one replica
    assert extender["filterVerb"] == "filter" and extender["prioritizeVerb"] == "prioritize"
    # Pods kube-scheduler cannot count (GPU shares) wait while the advisor is away, and the advisor binds,
    # re-checking the room, on the same Service.
    assert extender["nodeCacheCapable"] is True and extender["ignorable"] is False
    assert extender["bindVerb"] == "bind"
    # Every pod of the profile reaches the advisor (no managedResources), every feasible node is scored.
    assert "managedResources" not in extender and config["profiles"][0]["percentageOfNodesToScore"] == 100


def test_the_advisor_runs_two_replicas_with_probes_and_a_disruption_budget(rendered: list[dict[str, Any]]) -> None:
    deployment = find(rendered, "Deployment", "gpu-advisor")
    assert deployment["spec"]["replicas"] == 2
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert "--cluster=kube" in container["args"]
    assert find(rendered, "PodDisruptionBudget", "gpu-advisor")["spec"]["minAvailable"] == 1
    # A new replica is ready, and routed to, before an old one leaves.
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 0, "maxSurge": 1}
    assert deployment["spec"]["minReadySeconds"] == 5


def test_the_advisor_may_only_read_nodes_pods_dra_objects_and_budgets_and_write_its_own_leases(
    rendered: list[dict[str, Any]],
) -> None:
    role = find(rendered, "ClusterRole", "gpu-advisor-reader")
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list", "watch"]},
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceslices", "resourceclaims", "resourceclaimtemplates"],
            "verbs": ["get", "list", "watch"],
        },
        # a defragmentation plan on the served model reads the budgets when asked
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["list"]},
    ]
    # Writing: only what the bind verb needs (the Binding; its claims in its own namespace's Leases), no Node.
    binder = find(rendered, "ClusterRole", "gpu-advisor-binder")
    assert binder["rules"] == [{"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]}]
    claims = find(rendered, "Role", "gpu-advisor-claims")
    assert claims["metadata"]["namespace"] == "gpu-advisor"
    assert claims["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "list", "watch", "create", "update", "patch"],
        }
    ]
    claims_binding = find(rendered, "RoleBinding", "gpu-advisor-claims")
    assert claims_binding["metadata"]["namespace"] == "gpu-advisor"
    assert claims_binding["subjects"] == [{"kind": "ServiceAccount", "name": "gpu-advisor", "namespace": "gpu-advisor"}]
    publisher = find(rendered, "ClusterRole", "gpu-advisor-topology-publisher")
    assert publisher["rules"][0]["verbs"] == ["get", "patch"]
    bound = {b["roleRef"]["name"] for b in rendered if b["kind"] in ("ClusterRoleBinding", "RoleBinding")}
    assert "gpu-advisor-topology-publisher" not in bound


def test_evicting_is_an_operators_role_bound_to_nobody(rendered: list[dict[str, Any]]) -> None:
    defrag = find(rendered, "ClusterRole", "gpu-advisor-defrag")
    assert {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]} in defrag["rules"]
    intents = find(rendered, "Role", "gpu-advisor-defrag-intents")
    assert intents["metadata"]["namespace"] == "gpu-advisor"
    assert intents["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create", "patch", "delete"]}
    ]
    bound = {b["roleRef"]["name"] for b in rendered if b["kind"] in ("ClusterRoleBinding", "RoleBinding")}
    assert not bound & {"gpu-advisor-defrag", "gpu-advisor-defrag-intents"}  # the advisor plans, it never evicts


def test_the_auth_reader_binding_stays_in_kube_system(rendered: list[dict[str, Any]]) -> None:
    binding = find(rendered, "RoleBinding", "gpu-advisor-scheduler-auth-reader")
    assert binding["metadata"]["namespace"] == "kube-system"
    assert binding["subjects"][0]["namespace"] == "gpu-advisor"


def test_the_routes_the_scheduler_and_probes_call_are_served(api) -> None:  # type: ignore[no-untyped-def]
    for verb in ("filter", "prioritize"):
        assert api.post(f"/scheduler/{verb}", json={"Pod": {}, "NodeNames": []}).status_code == 200
    binding = {"PodName": "p", "PodNamespace": "ml", "PodUID": "u", "Node": "n"}
    assert api.post("/scheduler/bind", json=binding).status_code == 200
    for path in ("/healthz", "/readyz", "/metrics"):
        assert api.get(path).status_code == 200
