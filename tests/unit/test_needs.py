"""What a pod will need: the model read from real serving command lines, and its fit on one GPU or slot.

Sizes are in 10^9 bytes (GB) as models are quoted; GPU memory in MiB; 1 GB = 953.67 MiB.
"""

from __future__ import annotations

from typing import Any

import pytest

from extender.model.needs import MemoryNeed, fit_on, guess_model, memory_need
from extender.model.pods import pod_request


def vllm(*args: str) -> dict[str, Any]:
    return {"image": "vllm/vllm-openai:v0.9.0", "args": list(args)}


@pytest.mark.parametrize(
    ("container", "framework", "params", "bytes_per", "split"),
    [
        # vLLM: 8 B × 2 bytes (bf16, the default) = 16 GB on 1 GPU.
        ({"command": ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"]}, "vllm", 8, 2, 1),
        # SGLang: 72 B × 2 = 144 GB over --tp 4 = 36 GB per GPU.
        (
            {"args": ["--model-path", "Qwen/Qwen2.5-72B-Instruct", "--tp", "4"], "image": "lmsysorg/sglang"},
            "sglang",
            72,
            2,
            4,
        ),
        # TGI from env: Mixtral-8x7B is 46.7 B (experts share attention), NUM_SHARD 2.
        (
            {
                "env": [
                    {"name": "MODEL_ID", "value": "mistralai/Mixtral-8x7B-v0.1"},
                    {"name": "NUM_SHARD", "value": "2"},
                ],
                "image": "ghcr.io/huggingface/text-generation-inference:3.0",
            },
            "tgi",
            46.7,
            2,
            2,
        ),
        # GPTQ in the name: 4 bits = 0.5 bytes.
        ({"args": ["--model=TheBloke/Llama-2-13B-GPTQ"]}, "model server", 13, 0.5, 1),
        # --quantization fp8 wins over the name: 1 byte.
        (vllm("--model", "neuralmagic/Meta-Llama-3-70B-Instruct", "--quantization", "fp8"), "vllm", 70, 1, 1),
        # AWQ in the name: 0.5 bytes.
        (vllm("--model", "Qwen/Qwen2.5-7B-Instruct-AWQ"), "vllm", 7, 0.5, 1),
        # --dtype float32: 4 bytes; 125 M = 0.125 B.
        ({"command": ["sh", "-c", "vllm serve facebook/opt-125m --dtype float32"]}, "vllm", 0.125, 4, 1),
        # TP 4 × PP 2 = 8 GPUs hold one copy of the weights.
        (vllm("--model", "meta-llama/Llama-3.1-405B-Instruct-FP8", "-tp", "4", "-pp", "2"), "vllm", 405, 1, 8),
        # TensorRT-LLM: trtllm-serve MODEL --tp_size 2.
        (
            {"command": ["trtllm-serve", "meta-llama/Llama-3.1-70B-Instruct", "--tp_size", "2"]},
            "tensorrt-llm",
            70,
            2,
            2,
        ),
        # llama.cpp GGUF Q4_K_M ≈ 4.8 bits per weight = 0.6 bytes; it spreads over the GPUs it is given (1).
        ({"command": ["llama-server", "-m", "/models/llama-3.1-8b-instruct-Q4_K_M.gguf"]}, "llama.cpp", 8, 0.6, 1),
    ],
)
def test_the_model_is_read_from_each_servers_real_command_line(
    container: dict[str, Any], framework: str, params: float, bytes_per: float, split: int
) -> None:
    model = guess_model([container])
    assert model is not None
    assert (model.framework, model.params_b, model.split()) == (framework, params, split)
    assert model.bytes_per_param == pytest.approx(bytes_per)


def test_python_dash_m_and_sh_dash_c_are_not_taken_for_llama_cpp_flags() -> None:
    line = [
        "python",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "Qwen/Qwen2.5-7B",
        "--max-model-len",
        "4096",
    ]
    model = guess_model([{"command": line}])
    assert model is not None and model.model == "Qwen/Qwen2.5-7B" and model.context == 4096


def test_a_container_without_a_named_model_has_no_guess() -> None:
    assert guess_model([{"image": "busybox", "args": ["sleep", "3600"]}]) is None
    assert guess_model([{"args": ["--model", "my-private-model"]}]) is None  # no size in the name


def test_data_parallel_copies_the_weights_so_the_server_uses_tp_times_pp_times_dp_gpus() -> None:
    model = guess_model([vllm("--model", "meta-llama/Llama-3.1-8B", "-tp", "2", "--data-parallel-size", "2")])
    assert model is not None and model.split() == 2 and model.parallel == 4


def test_llama_cpp_uses_whatever_gpus_it_is_given() -> None:
    model = guess_model([{"command": ["llama-server", "-hf", "bartowski/Llama-3.3-70B-Instruct-Q8_0.gguf"]}])
    assert model is not None and model.parallel is None and model.split(4) == 4
    # Q8_0 = 8.5 bits = 1.0625 bytes; 70 B × 1.0625 = 74.4 GB.
    assert model.weights_gb == pytest.approx(74.375)


def pod(args: list[str], gpus: int = 1, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    container = {"name": "c", **vllm(*args), "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
    return {"metadata": {"annotations": annotations or {}}, "spec": {"containers": [container]}}


def test_declared_memory_wins_over_the_model() -> None:
    declared = pod(["--model", "meta-llama/Llama-3.1-8B"], annotations={"gpu-advisor.io/gpu-memory": "40Gi"})
    need = memory_need(pod_request(declared))
    assert need == MemoryNeed(40 * 1024, None, 1.0, "declared")


def test_inferred_memory_is_the_weights_per_gpu_plus_a_kv_cache() -> None:
    need = memory_need(pod_request(pod(["--model", "meta-llama/Llama-3.1-8B-Instruct"])))
    # 8 B × 2 = 16 GB = 15,259 MiB of weights; + 20 % (3.2 GB) for the KV cache = 19.2 GB = 18,311 MiB.
    assert need is not None and (need.weights_mib, need.per_gpu_mib) == (15259, 18311)
    assert need.utilization == 0.9  # vLLM's default --gpu-memory-utilization
    assert need.source == "inferred: meta-llama/Llama-3.1-8B-Instruct in bf16 ≈ 16 GB"


def test_max_model_len_sizes_the_kv_cache_where_the_models_shape_is_known() -> None:
    need = memory_need(pod_request(pod(["--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192"])))
    # Llama 3 8B: 2 × 32 layers × 8 KV heads × 128 × 2 bytes = 131,072 bytes per token; × 8,192 = 1.07 GB.
    assert need is not None and need.weights_mib is not None
    assert need.per_gpu_mib - need.weights_mib == pytest.approx(131072 * 8192 / 2**20, abs=1)


def test_tensor_parallelism_divides_weights_and_kv_cache() -> None:
    need = memory_need(pod_request(pod(["--model", "meta-llama/Meta-Llama-3-70B", "-tp", "4"], gpus=4)))
    # 70 × 2 = 140 GB / 4 = 35 GB = 33,379 MiB per GPU; × 1.2 = 42 GB = 40,054 MiB.
    assert need is not None and (need.weights_mib, need.per_gpu_mib) == (33379, 40054)


V100, T4, L40S, H100 = 16384, 15360, 46068, 81559
EIGHT_B = MemoryNeed(18311, 15259, 0.9, "inferred")


@pytest.mark.parametrize(
    ("need", "memory", "verdict", "room"),
    [
        # 0.9 × 16,384 = 14,746 MiB for vLLM < 15,259 of weights: no room at all for the KV cache.
        (EIGHT_B, V100, "tight", 0.0),
        # The weights (15,259) fit a 15,360 MiB T4, but 0.9 × 15,360 = 13,824 leaves nothing.
        (EIGHT_B, T4, "tight", 0.0),
        # 0.9 × 46,068 = 41,461 − 15,259 = 26,202 ≥ 3,052 wanted.
        (EIGHT_B, L40S, "fits", 1.0),
        # At utilization 1: 16,384 − 15,259 = 1,125 of 3,052 wanted = 37 %.
        (MemoryNeed(18311, 15259, 1.0, "inferred"), V100, "tight", 1125 / 3052),
        # 70 B over TP 4 = 33,379 MiB of weights > 16,384: it cannot start.
        (MemoryNeed(40054, 33379, 0.9, "inferred"), V100, "no", 0.0),
        # A declared 20 GiB does not fit 16 GiB, and fits 80 GiB.
        (MemoryNeed(20480, None, 1.0, "declared"), V100, "no", 1.0),
        (MemoryNeed(20480, None, 1.0, "declared"), H100, "fits", 1.0),
    ],
)
def test_fit_on_one_gpu(need: MemoryNeed, memory: int, verdict: str, room: float) -> None:
    fit = fit_on(need, memory)
    assert fit.verdict == verdict and fit.room == pytest.approx(room, abs=1e-3)
