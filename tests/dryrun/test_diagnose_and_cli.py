"""diagnose on snapshots (one scenario per step), explain and snapshot on the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.advice.diagnose import sm_pattern
from extender.sources.snapshot import load_snapshot
from gpu_advisor.cli import main
from tests.fakes.apiserver import FakeApiServer, node, pod
from tests.kube.test_kube_source import kubeconfig


def write(tmp_path: Path, doc: dict[str, Any]) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def diagnose(tmp_path: Path, doc: dict[str, Any], name: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["diagnose", name, "-n", "ml", "--cluster", write(tmp_path, doc), "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_all_gpus_allocated_is_explained_at_allocation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = {
        "nodes": [
            {
                "name": "dgx",
                "machine": "dgx1-v100",
                "free": [],
                "telemetry": [
                    {"gpu": g, "sm_util": 3 if g < 2 else 90, "memory_used_mib": 15000, "memory_total_mib": 16384}
                    for g in range(8)
                ],
            }
        ],
        "pods": [
            {"name": "holder", "namespace": "ml", "node": "dgx", "gpus": 8},
            {"name": "waiting", "namespace": "ml", "gpus": 2},
        ],
    }
    result = diagnose(tmp_path, doc, "waiting", capsys)
    assert result["explained_by"] == "allocation"
    step = result["steps"][0]
    assert step["finding"].startswith("no node has 2 GPUs free: all allocated; 2 allocated GPUs sit idle")
    assert "dgx: 0/8 free" in step["evidence"]
    assert "dgx GPU 0: allocated, SM 3%, 92% memory held" in step["evidence"]


def test_free_gpus_whose_memory_is_full_are_explained_at_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = {"sm_util": 0, "memory_used_mib": 78000, "memory_total_mib": 81559}
    doc = {
        "nodes": [
            {
                "name": "h100",
                "machine": "hgx-h100",
                "free": [4, 5, 6, 7],
                "telemetry": [{"gpu": g, **full} for g in range(8)],
            }
        ],
        "pods": [
            {"name": "serve", "namespace": "ml", "node": "h100", "gpus": 4},
            {"name": "waiting", "namespace": "ml", "gpus": 2},
        ],
    }
    result = diagnose(tmp_path, doc, "waiting", capsys)
    assert result["explained_by"] == "memory"
    assert result["steps"][0]["explains"] is False and result["steps"][0]["finding"] == "1 node(s) have 2 GPUs free"
    # 78,000 of 81,559 MiB = 96 % in use on GPUs the kubelet counts as free
    assert (
        "h100 GPU 4: free by allocation yet 96% of its memory is in use: idle but memory held (SM 0%) "
        "by something we don't know about"
    ) in result["steps"][1]["evidence"]


def test_a_node_selector_that_excludes_the_only_free_node_is_explained_at_placement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = {
        "nodes": [
            {
                "name": "h100-busy",
                "machine": "hgx-h100",
                "free": [],
                "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
            },
            {"name": "l40s-free", "machine": "l40s-pcie", "labels": {"nvidia.com/gpu.product": "NVIDIA-L40S"}},
        ],
        "pods": [
            {
                "name": "waiting",
                "namespace": "ml",
                "gpus": 1,
                "node_selector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
            }
        ],
    }
    result = diagnose(tmp_path, doc, "waiting", capsys)
    assert result["explained_by"] == "placement"
    assert result["steps"][2]["evidence"] == [
        "l40s-free: nodeSelector nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 does not match"
    ]


def test_a_hami_share_where_gpus_are_shared_the_alibaba_way_is_explained_at_allocation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No room of the pod's kind anywhere, however idle share-a's GPUs: allocation answers, and names
    the nodes that share GPUs another way."""
    doc = yaml.safe_load((Path(__file__).parents[2] / "examples/held-share/cluster.yaml").read_text())
    limits = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "4000"}
    spec = {"containers": [{"name": "c", "resources": {"limits": limits}}]}
    meta = {"name": "hami", "namespace": "ml"}
    doc["items"].append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    result = diagnose(tmp_path, doc, "hami", capsys)
    assert result["explained_by"] == "allocation"
    assert result["steps"][0]["finding"].startswith("no node shares GPUs the hami way the pod asks")
    assert result["steps"][0]["evidence"] == [f"share-{n}: shares GPUs the alibaba way" for n in "abc"]


def test_a_cpu_bound_training_pod_is_explained_at_application(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cycling = [0, 96, 3, 94, 0, 97, 2, 95]  # the GPU waits for every batch: the input pipeline is the limit
    doc = {
        "nodes": [
            {
                "name": "dgx",
                "machine": "dgx1-v100",
                "free": [2, 3, 4, 5, 6, 7],
                "telemetry": [
                    {
                        "gpu": g,
                        "sm_util": 50,
                        "memory_used_mib": 9000,
                        "memory_total_mib": 16384,
                        "pod": "ml/train",
                        "sm_history": cycling,
                    }
                    for g in (0, 1)
                ],
            }
        ],
        "pods": [{"name": "train", "namespace": "ml", "node": "dgx", "gpus": 2}],
    }
    result = diagnose(tmp_path, doc, "train", capsys)
    assert result["explained_by"] == "application"
    step = result["steps"][3]
    assert "CPU-bound" in step["finding"]
    assert step["evidence"][0] == "dgx GPU 0: SM cycling [0, 96, 3, 94, 0, 97, 2, 95]"


@pytest.mark.parametrize(
    ("history", "pattern"),
    [((0, 96, 3, 94, 0, 97), "cycling"), ((3, 5, 2, 4, 6), "flat-low"), ((88, 91, 93, 90), "busy"), ((1, 2), None)],
)
def test_sm_patterns(history: tuple[float, ...], pattern: str | None) -> None:
    assert sm_pattern(history) == pattern


def test_diagnose_text_marks_the_step_that_explains(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = {
        "nodes": [{"name": "dgx", "machine": "dgx1-v100", "free": []}],
        "pods": [{"name": "waiting", "namespace": "ml", "gpus": 2}],
    }
    assert main(["diagnose", "waiting", "-n", "ml", "--cluster", write(tmp_path, doc)]) == 0
    out = capsys.readouterr().out
    assert "explained by: allocation" in out and "→ 1. allocation:" in out


def test_diagnose_a_pod_that_is_not_there_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", "ghost", "-n", "ml", "--cluster", write(tmp_path, {"nodes": []})]) == 2
    assert capsys.readouterr().err.strip() == f"gpu-advisor: error: no GPU pod ml/ghost in {tmp_path / 'cluster.yaml'}"


def test_diagnose_names_the_namespace_a_pod_of_that_name_is_in(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", "notebook-1", "--cluster", "simulated"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("no GPU pod default/notebook-1 in simulated; notebook-1 is in research: -n research")


def test_explain_says_when_it_answers_about_the_built_in_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    examples = Path(__file__).parents[2] / "examples"
    assert main(["explain", str(examples / "finetune.yaml"), "--json"]) == 0
    assert capsys.readouterr().err.startswith("explain: about the built-in simulated cluster (--cluster kube")
    assert main(["explain", str(examples / "finetune.yaml"), "--json", "--cluster", "simulated"]) == 0
    assert capsys.readouterr().err == ""


def test_explain_prints_the_ranking_and_exits_3_when_unschedulable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        yaml.safe_dump(
            {
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "ml"},
                "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 4}}}]},
            }
        )
    )
    assert main(["explain", str(manifest)]) == 0
    out = capsys.readouterr().out
    assert "verdict: schedulable on 5 nodes; best: dgx1-v100-a with NVLink quad 4-5-6-7" in out
    assert "dgx1-v100-a  10     4,5,6,7" in out
    big = tmp_path / "big.yaml"
    big.write_text(manifest.read_text().replace("nvidia.com/gpu: 4", "nvidia.com/gpu: 32"))
    assert main(["explain", str(big), "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["schedulable"] is False


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("kind: Pod\nspec: [\n", "not valid YAML or JSON: line 3, column 1"),
        ("", "holds no manifest"),
        ("kind: Service\n", "kind 'Service' has no pod template"),
    ],
)
def test_explain_bad_manifests_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(content)
    assert main(["explain", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_snapshot_exports_the_live_cluster_for_offline_what_ifs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from extender.cluster.state import ANNOTATION_TOPOLOGY
    from extender.model.machines import bundled_machines
    from extender.model.smi_topo import parse_topo_matrix

    topo = parse_topo_matrix(bundled_machines()["dgx1-v100"]).to_json()
    with FakeApiServer() as fake:
        fake.put("nodes", node("dgx-a", annotations={ANNOTATION_TOPOLOGY: topo}))
        fake.put("pods", pod("train", "dgx-a", 4))
        cpu_pod = pod("web", "dgx-a", 0)
        cpu_pod["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1"}}
        fake.put("pods", cpu_pod)
        assert main(["snapshot", "--cluster", "kube", "--kubeconfig", kubeconfig(tmp_path, fake.url)]) == 0
    exported = tmp_path / "exported.yaml"
    exported.write_text(capsys.readouterr().out)
    snap = load_snapshot(exported)
    assert [p["metadata"]["name"] for p in snap.pods] == ["train"], "only GPU pods are exported"
    state = snap.cluster("replay").node("dgx-a")
    assert state is not None and state.free_gpus == (4, 5, 6, 7) and state.gpu_free_count == 4
    manifest = tmp_path / "pod.yaml"
    limits = "    resources: {limits: {nvidia.com/gpu: 4}}\n"
    manifest.write_text("kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n" + limits)
    assert main(["explain", str(manifest), "--cluster", str(exported)]) == 0
    assert "best: dgx-a with NVLink quad 4-5-6-7" in capsys.readouterr().out


def test_diagnose_reads_the_pods_sm_history_from_prometheus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.fakes.prometheus import FakePrometheus

    labels = {
        "__name__": "DCGM_FI_DEV_GPU_UTIL",
        "Hostname": "dgx",
        "gpu": "0",
        "UUID": "GPU-0",
        "namespace": "ml",
        "pod": "train",
    }
    doc = {
        "nodes": [{"name": "dgx", "machine": "dgx1-v100"}],
        "pods": [{"name": "train", "namespace": "ml", "node": "dgx", "gpus": 1}],
    }
    with FakePrometheus([(labels, 4.0)], history=[(labels, [3, 5, 2, 4, 6, 3])]) as prom:
        assert (
            main(
                ["diagnose", "train", "-n", "ml", "--cluster", write(tmp_path, doc), "--prometheus", prom.url, "--json"]
            )
            == 0
        )
        assert 'DCGM_FI_DEV_GPU_UTIL{namespace="ml",pod="train"}' in prom.queries
    result = json.loads(capsys.readouterr().out)
    assert result["explained_by"] == "application" and "I/O-bound" in result["steps"][3]["finding"]
    assert result["steps"][3]["evidence"] == ["dgx GPU 0: SM flat-low [3, 5, 2, 4, 6, 3]"]
