"""Every pod of the install runs locked down, within limits, spread out and on pinned images."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.manifests.rendering import MANIFESTS, Doc, find, workloads


def names(rendered: list[Doc]) -> list[str]:
    return [w["metadata"]["name"] for w in workloads(rendered)]


def test_the_install_has_the_three_workloads_and_the_certificate_job(rendered: list[Doc]) -> None:
    assert sorted(names(rendered)) == ["gpu-advisor", "gpu-advisor-agent", "gpu-advisor-certs", "gpu-advisor-scheduler"]


@pytest.mark.parametrize("name", ["gpu-advisor", "gpu-advisor-agent", "gpu-advisor-scheduler"])
def test_each_pod_runs_with_the_runtimes_seccomp_profile_and_no_capabilities(rendered: list[Doc], name: str) -> None:
    (workload,) = [w for w in workloads(rendered) if w["metadata"]["name"] == name]
    spec = workload["spec"]["template"]["spec"]
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not spec.get("hostNetwork") and not spec.get("hostPID") and not spec.get("hostIPC")
    for container in spec["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["readOnlyRootFilesystem"] is True
        assert context["capabilities"] == {"drop": ["ALL"]}, "nothing added back"
        assert not context.get("privileged")


@pytest.mark.parametrize("name", ["gpu-advisor", "gpu-advisor-scheduler"])
def test_the_advisor_and_the_scheduler_run_as_non_root(rendered: list[Doc], name: str) -> None:
    context = find(rendered, "Deployment", name)["spec"]["template"]["spec"]["securityContext"]
    assert context["runAsNonRoot"] is True and context["runAsUser"] == 65532


def test_the_agent_is_root_only_to_reach_the_kubelet_socket_and_holds_nothing_else(rendered: list[Doc]) -> None:
    spec = find(rendered, "DaemonSet", "gpu-advisor-agent")["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsUser"] == 0 and spec["securityContext"]["runAsNonRoot"] is False
    (container,) = spec["containers"]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    (volume,) = spec["volumes"]
    assert volume["hostPath"] == {"path": "/var/lib/kubelet/pod-resources", "type": "Directory"}
    (mount,) = container["volumeMounts"]
    assert mount["readOnly"] is True


def test_no_other_workload_mounts_a_host_path(rendered: list[Doc]) -> None:
    for workload in workloads(rendered):
        if workload["metadata"]["name"] != "gpu-advisor-agent":
            assert all("hostPath" not in v for v in workload["spec"]["template"]["spec"].get("volumes", []))


@pytest.mark.parametrize(
    ("name", "memory_limit"),
    [("gpu-advisor", "512Mi"), ("gpu-advisor-agent", "128Mi"), ("gpu-advisor-scheduler", "1Gi")],
)
def test_each_container_requests_cpu_and_memory_and_is_capped_in_memory(
    rendered: list[Doc], name: str, memory_limit: str
) -> None:
    (workload,) = [w for w in workloads(rendered) if w["metadata"]["name"] == name]
    (container,) = workload["spec"]["template"]["spec"]["containers"]
    resources = container["resources"]
    assert set(resources["requests"]) == {"cpu", "memory"}
    assert resources["limits"] == {"memory": memory_limit}, "no CPU limit: throttling would stall the event loop"


@pytest.mark.parametrize("name", ["gpu-advisor", "gpu-advisor-scheduler"])
def test_each_deployment_keeps_a_replica_through_drains_and_spreads_over_nodes(rendered: list[Doc], name: str) -> None:
    deployment = find(rendered, "Deployment", name)
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["replicas"] == 2
    (budget,) = [
        d for d in rendered if d["kind"] == "PodDisruptionBudget" and d["spec"]["selector"]["matchLabels"] == labels
    ]
    assert budget["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert budget["spec"]["minAvailable"] == 1  # of 2: one may be evicted at a time, one always serves
    (term,) = deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == labels


DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
TAG = re.compile(r":(?!latest$)[\w][\w.-]{0,127}$")


def test_every_image_is_pinned_in_one_place_by_tag_or_digest(rendered: list[Doc]) -> None:
    kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    pinned = {entry["newName"] if "newName" in entry else entry["name"] for entry in kustomization["images"]}
    for workload in workloads(rendered):
        for container in workload["spec"]["template"]["spec"]["containers"]:
            image = container["image"]
            reference = DIGEST.sub("", image)
            assert DIGEST.search(image) or TAG.search(reference), image
            assert reference.rsplit(":", 1)[0] in pinned, f"{image} is not pinned in manifests/kustomization.yaml"
