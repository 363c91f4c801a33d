"""The agent's ValidatingAdmissionPolicy, evaluated over admission requests shaped as the API server sends them.

The old Node is a real one (captured from a v1.36 API server) with the kubelet's annotations and a GPU
taint added; the new Node is the old one with a JSON merge patch applied, as the API server does for
the agent's `patch_node`. The agent's own documents come from the agent's NVML reader over fake NVML
machines, so the sizes are the real ones.
"""

from __future__ import annotations

import itertools
import json
import shutil
import uuid
from pathlib import Path

import pytest

from extender.cluster.state import ANNOTATION_FREE_GPUS, ANNOTATION_TOPOLOGY, FreeReport
from extender.model.topology import Gpu, GpuTopology, Link, MigInstance
from extender.sources.nvml import discover_topology
from tests.conftest import DATA, NOW
from tests.fakes import machines
from tests.fakes.nvml import FakeMachine, fake_pynvml
from tests.manifests.admission_policy import Verdict, evaluate, merge_patch
from tests.manifests.rendering import MANIFESTS, Doc, find, render

AGENT = "system:serviceaccount:gpu-advisor:gpu-advisor-agent"
TOPOLOGY_LIMIT = 32768
FREE_LIMIT = 1024


def real_node() -> Doc:
    captured: Doc = json.loads((DATA / "kube" / "extender-filter-nocache.json").read_text())["Nodes"]["items"][0]
    captured["metadata"]["labels"]["nvidia.com/gpu.present"] = "true"
    captured["metadata"]["annotations"] = {
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        "team": "ml",
        ANNOTATION_FREE_GPUS: FreeReport((0, 1), NOW - 60).to_json(),
    }
    captured["spec"] = {
        "podCIDR": "10.244.1.0/24",
        "podCIDRs": ["10.244.1.0/24"],
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    }
    return captured


OLD = real_node()
NODE = OLD["metadata"]["name"]  # gpu-node-1


def admission_request(node_claim: str | None = NODE, username: str = AGENT) -> Doc:
    """An UPDATE of the Node by a pod-bound ServiceAccount token, as the API server describes it."""
    extra = {
        "authentication.kubernetes.io/credential-id": ["JTI=3b0f4bd5-0a6c-4a2e-9d4e-8f3f0c6f2a11"],
        "authentication.kubernetes.io/pod-name": ["gpu-advisor-agent-x7k2p"],
        "authentication.kubernetes.io/pod-uid": ["5c1f0a2e-1d7b-4f7e-9a51-0c6a3f8e2b44"],
    }
    if node_claim is not None:
        extra["authentication.kubernetes.io/node-name"] = [node_claim]
        extra["authentication.kubernetes.io/node-uid"] = ["90829edb-a96c-4fc8-bd61-00450c58b577"]
    namespace = username.split(":")[2] if username.startswith("system:serviceaccount:") else ""
    return {
        "uid": "0d6c2f8e-4b7a-4c1e-8f0e-2a9b3c4d5e6f",
        "kind": {"group": "", "version": "v1", "kind": "Node"},
        "resource": {"group": "", "version": "v1", "resource": "nodes"},
        "name": NODE,
        "operation": "UPDATE",
        "userInfo": {
            "username": username,
            "uid": "8e1b7c44-2f0a-4d8e-b7a9-6c5d4e3f2a10",
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"],
            "extra": extra,
        },
        "dryRun": False,
        "options": {"kind": "PatchOptions", "apiVersion": "meta.k8s.io/v1"},
    }


def patched(patch: Doc) -> Doc:
    """The Node after the API server applied the merge patch (and recorded who wrote what)."""
    new: Doc = merge_patch(OLD, patch)
    new["metadata"]["managedFields"] = [
        *OLD["metadata"]["managedFields"],
        {"manager": "gpu-advisor", "operation": "Update", "apiVersion": "v1", "time": "2026-12-02T11:08:00Z"},
    ]
    return new


def nvml_document(machine: FakeMachine, sysfs: Path) -> str:
    return discover_topology(fake_pynvml(machine), machine.write_sysfs(sysfs)).to_json()


def nvswitch_board(gpus: int, mig_per_gpu: int) -> str:
    """A board of `gpus` GPUs, every pair over NVSwitch, filled in as NVML would (the largest real shape)."""
    return GpuTopology(
        [
            Gpu(
                i,
                uuid=f"GPU-{uuid.UUID(int=i)}",
                pci_bus_id=f"00000000:{0x18 + i:02X}:00.0",
                product="NVIDIA H100 80GB HBM3",
                memory_mib=81559,
                numa_node=i // 8,
                mig=tuple(
                    MigInstance("1g.10gb", f"MIG-{uuid.UUID(int=1000 * i + m)}", 9856) for m in range(mig_per_gpu)
                )
                or None,
            )
            for i in range(gpus)
        ],
        [Link(a, b, nvlinks=18) for a, b in itertools.combinations(range(gpus), 2)],
    ).to_json()


def agent_patch(topology: str, free: tuple[int, ...] = (0, 2, 3)) -> Doc:
    """What the agent sends: both annotations in one merge patch."""
    return {
        "metadata": {
            "annotations": {ANNOTATION_TOPOLOGY: topology, ANNOTATION_FREE_GPUS: FreeReport(free, NOW).to_json()}
        }
    }


def one_patch(first: Doc, second: Doc) -> Doc:
    """Two merge patches sent as one (nulls kept: they delete)."""
    both = dict(first)
    for key, value in second.items():
        both[key] = one_patch(first[key], value) if isinstance(value, dict) and key in first else value
    return both


def annotate(**values: str | None) -> Doc:
    return {"metadata": {"annotations": values}}


@pytest.fixture(scope="module")
def policy(rendered: list[Doc]) -> Doc:
    return find(rendered, "ValidatingAdmissionPolicy", "gpu-advisor-agent")


@pytest.fixture(scope="module")
def h100(tmp_path_factory: pytest.TempPathFactory) -> str:
    return nvml_document(machines.hgx_h100(), tmp_path_factory.mktemp("sys"))


def judge(policy: Doc, patch: Doc, node_claim: str | None = NODE, username: str = AGENT) -> Verdict:
    return evaluate(policy, admission_request(node_claim, username), OLD, patched(patch))


# -- what the agent does -----------------------------------------------------------------------------


def test_the_agents_own_patch_with_a_real_hgx_h100_topology_is_allowed(policy: Doc, h100: str) -> None:
    assert 2_000 < len(h100) < 4_000  # 8 GPUs with UUIDs, bus IDs and names
    verdict = judge(policy, agent_patch(h100))
    assert verdict.applies and verdict.allowed, verdict.denials


def test_the_agents_own_patch_with_mig_instances_is_allowed(policy: Doc, tmp_path: Path) -> None:
    document = nvml_document(machines.a100_mig(), tmp_path)
    assert "MIG-" in document
    assert judge(policy, agent_patch(document, free=(0,))).allowed


def test_the_agent_may_remove_its_own_annotation(policy: Doc) -> None:
    assert judge(policy, annotate(**{ANNOTATION_FREE_GPUS: None})).allowed


# Sizes: 16 GPUs × (GPU record + 7 MIG instances) + 120 links (each with gpu_links and its old name nvlinks)
# is the largest real document, 19,648 bytes; the bound, 32,768, is 1.67 × that. 40 GPUs is 47,504 bytes
# with no UUID, bus ID, name or MIG at all.
@pytest.mark.parametrize(
    ("document", "allowed"),
    [
        (nvswitch_board(16, mig_per_gpu=7), True),
        (nvswitch_board(16, mig_per_gpu=0), True),
        ('{"version":1}'.ljust(TOPOLOGY_LIMIT), True),  # JSON may end in blanks: exactly at the bound
        ('{"version":1}'.ljust(TOPOLOGY_LIMIT + 1), False),
        ('{"product":"' + "é" * (TOPOLOGY_LIMIT // 2) + '"}', False),  # 16,398 characters, 32,783 bytes
        (
            GpuTopology(
                [Gpu(i) for i in range(40)], [Link(a, b, 18) for a, b in itertools.combinations(range(40), 2)]
            ).to_json(),
            False,
        ),
    ],
    ids=["16-gpus-7-mig-each", "16-gpus", "at-the-bound", "one-byte-over", "two-byte-characters", "40-gpus"],
)
def test_the_topology_annotation_is_bounded_in_bytes(policy: Doc, document: str, allowed: bool) -> None:
    verdict = judge(policy, annotate(**{ANNOTATION_TOPOLOGY: document}))
    assert verdict.allowed is allowed, (len(document.encode()), verdict.denials)
    if not allowed:
        assert verdict.denials == (
            "gpu-advisor.io/topology is larger than 32768 bytes (a 16-GPU board with MIG is under 20000)",
        )


def test_sixteen_gpus_with_seven_mig_instances_each_is_the_largest_real_document() -> None:
    assert len(nvswitch_board(16, mig_per_gpu=7)) == 19_648
    assert TOPOLOGY_LIMIT / 19_648 > 1.6


@pytest.mark.parametrize(
    ("free_gpus", "allowed"),
    [
        (FreeReport(tuple(range(16)), NOW).to_json(), True),  # 88 bytes
        ("x" * FREE_LIMIT, True),
        ("x" * (FREE_LIMIT + 1), False),
    ],
    ids=["16-free", "at-the-bound", "one-byte-over"],
)
def test_the_free_gpus_annotation_is_bounded_in_bytes(policy: Doc, free_gpus: str, allowed: bool) -> None:
    assert judge(policy, annotate(**{ANNOTATION_FREE_GPUS: free_gpus})).allowed is allowed


# -- what it may not do -------------------------------------------------------------------------------

ONLY_ITS_KEYS = (
    "the gpu-advisor agent may only change the annotations gpu-advisor.io/topology and gpu-advisor.io/free-gpus"
)


@pytest.mark.parametrize(
    ("patch", "denial"),
    [
        (annotate(**{"gpu-advisor.io/other": "x"}), ONLY_ITS_KEYS),
        (annotate(**{"gpu-advisor.io/interconnect": "nvlink"}), ONLY_ITS_KEYS),
        (annotate(**{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}), ONLY_ITS_KEYS),
        (annotate(team="other"), ONLY_ITS_KEYS),
        (annotate(team=None), ONLY_ITS_KEYS),
        (annotate(**{"node.alpha.kubernetes.io/ttl": None}), ONLY_ITS_KEYS),
        (
            {"metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}}},
            "the gpu-advisor agent may not change node labels",
        ),
        (
            {"metadata": {"labels": {"nvidia.com/gpu.present": None}}},
            "the gpu-advisor agent may not change node labels",
        ),
        (
            {"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "1"}]}},
            "the gpu-advisor agent may not change node ownerReferences",
        ),
        ({"metadata": {"finalizers": ["gpu-advisor.io/hold"]}}, "the gpu-advisor agent may not change node finalizers"),
        ({"spec": {"taints": None}}, "the gpu-advisor agent may not change node spec (taints, unschedulable, ...)"),
        (
            {"spec": {"taints": [{"key": "evil", "effect": "NoExecute"}]}},
            "the gpu-advisor agent may not change node spec (taints, unschedulable, ...)",
        ),
        (
            {"spec": {"unschedulable": True}},
            "the gpu-advisor agent may not change node spec (taints, unschedulable, ...)",
        ),
    ],
    ids=[
        "another-gpu-advisor-key",
        "the-interconnect-key",
        "an-nvidia-key",
        "change-a-foreign-annotation",
        "remove-a-foreign-annotation",
        "remove-a-kubelet-annotation",
        "add-a-label",
        "remove-a-label",
        "owner-references",
        "finalizers",
        "remove-the-taints",
        "add-a-taint",
        "cordon",
    ],
)
def test_the_agent_may_change_nothing_else(policy: Doc, h100: str, patch: Doc, denial: str) -> None:
    alone = judge(policy, patch)
    assert alone.denials == (denial,)
    # ...nor slip it in beside a good patch.
    assert denial in judge(policy, one_patch(agent_patch(h100), patch)).denials


@pytest.mark.parametrize(
    ("node_claim", "username", "denial"),
    [
        ("gpu-node-2", AGENT, "the gpu-advisor agent may only change the node it runs on"),
        (None, AGENT, "the gpu-advisor agent may only change the node it runs on"),  # a legacy, unbound token
        (
            NODE,
            "system:serviceaccount:tenant:gpu-advisor-agent",
            "only the gpu-advisor agent of namespace gpu-advisor may annotate nodes, not "
            "system:serviceaccount:tenant:gpu-advisor-agent",
        ),
    ],
    ids=["another-node", "no-node-claim", "same-name-in-another-namespace"],
)
def test_only_the_installs_agent_and_only_on_its_own_node(
    policy: Doc, h100: str, node_claim: str | None, username: str, denial: str
) -> None:
    assert judge(policy, agent_patch(h100), node_claim, username).denials == (denial,)


@pytest.mark.parametrize(
    "username",
    ["system:node:gpu-node-1", "kubernetes-admin", "system:serviceaccount:gpu-advisor:gpu-advisor"],
)
def test_the_policy_leaves_everyone_else_alone(policy: Doc, username: str) -> None:
    verdict = judge(policy, {"metadata": {"labels": {"team": "x"}}, "spec": {"unschedulable": True}}, username=username)
    assert not verdict.applies


def test_the_namespace_is_taken_from_the_install(tmp_path: Path, h100: str) -> None:
    copy = shutil.copytree(MANIFESTS, tmp_path / "manifests")
    agent = copy / "agent" / "kustomization.yaml"
    agent.write_text(agent.read_text().replace("namespace: gpu-advisor", "namespace: gpu-ops"))
    docs = render(copy)
    policy = find(docs, "ValidatingAdmissionPolicy", "gpu-advisor-agent")
    assert judge(policy, agent_patch(h100), username="system:serviceaccount:gpu-ops:gpu-advisor-agent").allowed
    assert not judge(policy, agent_patch(h100), username=AGENT).allowed
    binding = find(docs, "ClusterRoleBinding", "gpu-advisor-agent")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "gpu-advisor-agent", "namespace": "gpu-ops"}]
    policy_binding = find(docs, "ValidatingAdmissionPolicyBinding", "gpu-advisor-agent")
    assert "namespace" not in policy["metadata"] and "namespace" not in policy_binding["metadata"], "cluster-scoped"


def test_the_agent_daemonset_reads_the_kubelet_socket_read_only_on_gpu_nodes(rendered: list[Doc]) -> None:
    ds = find(rendered, "DaemonSet", "gpu-advisor-agent")["spec"]["template"]["spec"]
    assert ds["nodeSelector"] == {"nvidia.com/gpu.present": "true"} and ds["runtimeClassName"] == "nvidia"
    (mount,) = ds["containers"][0]["volumeMounts"]
    assert mount["mountPath"] == "/var/lib/kubelet/pod-resources" and mount["readOnly"] is True
    env = {e["name"]: e for e in ds["containers"][0]["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    role = find(rendered, "ClusterRole", "gpu-advisor-agent")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]
