"""Each admission rule, as the requirement it pins, with the arithmetic beside it."""

from __future__ import annotations

from typing import Any

from extender.model.pods import pod_request
from extender.sources.snapshot import parse_snapshot, simulated_cluster
from webhook.rules import ClusterView, Finding, evaluate_rules, workload_from

SIMULATED = ClusterView(tuple(simulated_cluster(now=1_796_000_000).cluster("sim").nodes()))


def pod(
    gpus: int | None = 1,
    args: list[str] | None = None,
    selector: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    mig: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    limits = {}
    if gpus:
        limits["nvidia.com/gpu"] = str(gpus)
    if mig:
        limits[f"nvidia.com/mig-{mig}"] = "1"
    container: dict[str, Any] = {"name": "c", "image": "vllm/vllm-openai:v0.9.0", "resources": {"limits": limits}}
    if args:
        container["args"] = args
    return {
        "metadata": {"annotations": annotations or {}},
        "spec": {"containers": [container], **({"nodeSelector": selector} if selector else {}), **spec},
    }


def findings(template: dict[str, Any], view: ClusterView = SIMULATED) -> dict[str, Finding]:
    workload = workload_from("Pod", "p", "ml", template, pod_request(template))
    found = evaluate_rules(workload, view)
    assert all(len(f.message) <= 120 for f in found), [f.message for f in found]
    return {f.code: f for f in found}


H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
T4 = {"nvidia.com/gpu.product": "Tesla-T4"}
L40S = {"nvidia.com/gpu.product": "NVIDIA-L40S"}


def test_llama_3_70b_in_bf16_does_not_fit_one_80_gb_h100() -> None:
    found = findings(pod(1, ["--model", "meta-llama/Meta-Llama-3-70B-Instruct"], selector=H100))
    f = found["model-does-not-fit"]
    # 70 B parameters × 2 bytes (bf16) = 140 GB; + 20 % for KV cache and activations = 168 GB > 80 GB.
    # 168 / 80 = 2.1 → 3 GPUs, rounded up to a power of two for tensor parallelism: 4.
    assert f.severity == "warning"
    assert (
        f.message == "meta-llama/Meta-Llama-3-70B-Instruct in bf16 ≈ 140 GB (+20% ≈ 168 GB) does not fit one 80 GB GPU"
    )
    assert f.advice.startswith("use 4 GPUs with --tensor-parallel-size 4")


def test_the_same_model_split_over_4_h100s_fits() -> None:
    args = ["vllm", "serve", "meta-llama/Meta-Llama-3-70B-Instruct", "--tensor-parallel-size", "4"]
    assert "model-does-not-fit" not in findings(pod(4, args, selector=H100))  # 168 GB / 4 = 42 GB per GPU


def test_a_7b_int4_model_on_a_whole_gpu_is_told_about_the_mig_slice_that_would_do() -> None:
    found = findings(pod(1, ["--model", "Qwen/Qwen2.5-7B-Instruct-AWQ"], selector=H100))
    f = found["whole-gpu-small-model"]
    # 7 B × 0.5 bytes (AWQ, 4-bit) = 3.5 GB; × 1.2 = 4.2 GB ≤ 40 % of an 80 GB GPU (5 %);
    # the smallest MIG slice offered in the cluster with ≥ 4.2 GB is 1g.5gb.
    assert f.severity == "info" and "uses ≤ 5% of a whole 80 GB GPU" in f.message
    assert f.advice == "request nvidia.com/mig-1g.5gb instead of a whole GPU"


def test_more_gpus_than_any_eligible_node_has_is_an_error() -> None:
    f = findings(pod(16, selector=H100))["exceeds-largest-node"]
    assert f.severity == "error" and f.message == "asks for 16 GPUs; the largest of the 1 nodes it may use has 8"
    assert f.advice.startswith("request at most 8 nvidia.com/gpu per pod")


def test_a_selector_that_matches_no_gpu_node_is_an_error() -> None:
    f = findings(pod(1, selector={"nvidia.com/gpu.product": "Tesla-P100"}))["exceeds-largest-node"]
    assert "no node it may use (selectors, affinity, taints) has nvidia.com/gpu" in f.message


def test_taints_that_the_pod_does_not_tolerate_make_nodes_ineligible() -> None:
    doc = {
        "nodes": [
            {"name": "big", "machine": "hgx-h100", "taints": [{"key": "team", "value": "a", "effect": "NoSchedule"}]},
            {"name": "small", "machine": "rtx-a6000-bridge"},
        ]
    }
    view = ClusterView(tuple(parse_snapshot(doc).cluster("t").nodes()))
    # Without the toleration only "small" (3 GPUs) is eligible for a 4-GPU pod.
    assert findings(pod(4), view)["exceeds-largest-node"].message.endswith(
        "the largest of the 1 nodes it may use has 3"
    )
    tolerating = pod(4, tolerations=[{"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"}])
    assert "exceeds-largest-node" not in findings(tolerating, view)


def test_a_mig_profile_no_node_offers_is_an_error_with_the_nearest_offered_slice() -> None:
    doc = {"nodes": [{"name": "a100", "gpus": 0, "mig": {"1g.5gb": 7, "3g.20gb": 2}}]}
    view = ClusterView(tuple(parse_snapshot(doc).cluster("t").nodes()))
    f = findings(pod(None, mig="2g.10gb"), view)["mig-profile-unavailable"]
    assert f.severity == "error" and f.message == "no node offers nvidia.com/mig-2g.10gb (offered: 1g.5gb, 3g.20gb)"
    assert f.advice.startswith("request nvidia.com/mig-3g.20gb")  # the smallest offered slice with ≥ 10 GB


def test_more_gpus_than_any_nvlink_set_warns_on_pcie_only_nodes() -> None:
    f = findings(pod(4, selector=L40S))["no-nvlink-set"]
    assert f.message == "asks for 4 GPUs; no node it may use has 4 joined by NVLink (PCIe only)"


def test_dgx1_offers_an_nvlink_quad_but_no_nvlink_octet() -> None:
    dgx = {"nvidia.com/gpu.product": "Tesla-V100-SXM2-16GB"}
    assert "no-nvlink-set" not in findings(pod(4, selector=dgx))
    # The hybrid cube mesh is one NVLink island of 8, yet 0 and 5 share no link: the largest set joined
    # pairwise is a quad.
    f = findings(pod(8, selector=dgx))["no-nvlink-set"]
    assert f.message.endswith("(at most 4 are)") and "split the job into 4-GPU pods" in f.advice


def test_two_time_sliced_gpus_may_be_one_physical_gpu() -> None:
    f = findings(pod(2, selector=T4))["timeslice-multi-gpu"]
    assert f.message == "asks for 2 time-sliced GPUs (t4-ts-a): the replicas may all be one physical GPU"


def test_latency_sensitive_pods_are_warned_off_time_slicing() -> None:
    template = pod(1, selector=T4, annotations={"gpu-advisor.io/latency-sensitive": "true"})
    assert findings(template)["timeslice-latency-sensitive"].message == (
        "latency-sensitive, but all 1 GPU nodes it may use are time-sliced"
    )
    assert "timeslice-latency-sensitive" not in findings(pod(1, selector=T4, priorityClassName="batch"))
    assert "timeslice-latency-sensitive" in findings(pod(1, selector=T4, priorityClassName="high-priority"))


def test_vllm_on_a_gpu_shared_4_ways_must_lower_its_memory_utilization() -> None:
    f = findings(pod(1, ["--model", "Qwen/Qwen2.5-0.5B"], selector=T4))["timeslice-memory"]
    # vLLM takes 90 % of the GPU by default; shared 4 ways, each may take at most 1/4: 0.9 / 4 = 0.225 → 0.22.
    assert f.message == "vLLM on a GPU shared 4 ways with --gpu-memory-utilization unset (0.9)"
    assert f.advice == "pass --gpu-memory-utilization 0.22 (≤ 1/4)"
    lowered = pod(1, ["--model", "Qwen/Qwen2.5-0.5B", "--gpu-memory-utilization", "0.2"], selector=T4)
    assert "timeslice-memory" not in findings(lowered)


def test_declared_memory_of_neighbours_plus_this_pod_over_one_shared_gpu_warns() -> None:
    # t4-ts-a: 4 physical T4 of 15 GiB; neighbours declared 2 × 6 GiB + 1 × 4 GiB = 16 GiB, 4 GiB per GPU.
    # 12 GiB + 4 GiB = 16 GiB > 15 GiB: warned; 10 GiB + 4 GiB = 14 GiB fits one GPU.
    template = pod(1, selector=T4, annotations={"gpu-advisor.io/gpu-memory": "12Gi"})
    f = findings(template)["timeslice-memory"]
    assert f.message == "t4-ts-a: 12 GiB/GPU (declared) + 4 GiB/GPU declared by neighbours > one 15 GiB GPU"
    assert "timeslice-memory" not in findings(pod(1, selector=T4, annotations={"gpu-advisor.io/gpu-memory": "10Gi"}))


def test_declared_memory_is_preferred_to_inference_and_the_message_says_which() -> None:
    inferred = findings(pod(1, ["--model", "Qwen/Qwen2.5-7B-Instruct-AWQ"], selector=H100))["whole-gpu-small-model"]
    declared = findings(
        pod(
            1,
            ["--model", "Qwen/Qwen2.5-7B-Instruct-AWQ"],
            selector=H100,
            annotations={"gpu-advisor.io/gpu-memory": "6Gi"},
        )
    )["whole-gpu-small-model"]
    assert inferred.message.startswith("Qwen/Qwen2.5-7B-Instruct-AWQ in awq ≈ 4 GB")
    assert declared.message.startswith("6 GB declared uses ≤ 8%")


def test_a_plain_gpu_pod_that_fits_gets_no_findings() -> None:
    assert findings(pod(2, selector=H100)) == {}
