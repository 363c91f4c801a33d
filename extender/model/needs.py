"""What a pod will need of each GPU it gets: memory, where that number comes from, and parallelism.

Declared memory (``gpu-advisor.io/gpu-memory``, per GPU) wins; otherwise it is inferred from the model
its server names (``serving``). The parameter count comes from the model's name (``Llama-3-70B`` → 70 B,
``Qwen2.5-0.5B`` → 0.5 B, ``Mixtral-8x7B`` → 46.7 B); bytes per parameter from ``--quantization`` or the
name, else ``--dtype`` (fp32 4, fp16/bf16 2, fp8/int8 1, int4/AWQ/GPTQ 0.5; GGUF by its quant type).

    weights (GB)        = parameters (B) × bytes per parameter
    split               = TP × PP          (both divide the weights; DP copies them; llama.cpp: the GPUs given)
    weights per GPU     = weights / split
    KV cache per GPU    = KV bytes per token × context / split      where the model's shape and the context
                                                                     are known, else 20 % of weights per GPU
    need per GPU        = weights per GPU + KV cache per GPU

A GPU (or slot) of M holds it when weights per GPU ≤ M — below that nothing starts — and the KV cache fits
in what the server takes of it: utilization × M − weights per GPU (vLLM takes 0.9 unless told).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from extender.model.serving import ServingArgs, serving_args

__all__ = ["HEADROOM", "Fit", "MemoryNeed", "ModelNeed", "fit_on", "guess_model", "memory_need"]

HEADROOM = 1.2  # weights + 20 %: KV cache, activations and CUDA context, where the KV cache is not known
MIB_PER_GB = 1e9 / 2**20  # model sizes are in 10^9 bytes, GPU memory in MiB
_PARAMS = re.compile(r"(?<![a-z0-9.])(?:(\d+)x)?(\d+(?:\.\d+)?)([bm])(?![a-z0-9])", re.IGNORECASE)
_MOE_TOTAL_B = {("8", "7"): 46.7, ("8", "22"): 141.0}  # Mixtral: experts share attention weights
_BYTES = {
    **dict.fromkeys(("float32", "fp32", "float"), 4.0),
    **dict.fromkeys(("float16", "fp16", "half", "bfloat16", "bf16", "auto"), 2.0),
    **dict.fromkeys(("fp8", "int8", "eetq", "w8a8", "bitsandbytes-8bit"), 1.0),
    **dict.fromkeys(("awq", "gptq", "int4", "bitsandbytes", "bitsandbytes-nf4", "nf4", "marlin", "gguf"), 0.5),
    **dict.fromkeys(("awq_marlin", "gptq_marlin", "w4a16", "fp4", "nvfp4", "mxfp4", "bitsandbytes-fp4"), 0.5),
}
_NAME_QUANT = (
    ("awq", 0.5),
    ("gptq", 0.5),
    ("int4", 0.5),
    ("4bit", 0.5),
    ("w4a16", 0.5),
    ("fp4", 0.5),
    ("-q4", 0.5),
    ("fp8", 1.0),
    ("int8", 1.0),
    ("8bit", 1.0),
    ("w8a8", 1.0),
)
# What a server takes of a GPU when not told: vLLM 0.9 (its --gpu-memory-utilization default); the others
# size their cache from what is left after the weights, so all of the GPU.
_DEFAULT_UTILIZATION = {"vllm": 0.9}
# GGUF quant types by bits per weight, as llama.cpp's quantize tool lists them (Q4_K_M ≈ 4.8 bits).
_GGUF_BITS = (("q2_k", 2.6), ("q3_k", 3.4), ("q4_0", 4.5), ("q4_k", 4.8), ("q5_k", 5.7), ("q6_k", 6.6), ("q8_0", 8.5))
# KV cache bytes per token at 16 bits = 2 (K and V) × layers × KV heads × head dim × 2 bytes, from each
# model's config.json (num_hidden_layers, num_key_value_heads, head_dim).
_KV_PER_TOKEN = (
    ("llama-3", 8, 2 * 32 * 8 * 128 * 2),
    ("llama-3", 70, 2 * 80 * 8 * 128 * 2),
    ("llama-3", 405, 2 * 126 * 8 * 128 * 2),
    ("qwen2.5", 7, 2 * 28 * 4 * 128 * 2),
    ("qwen2.5", 72, 2 * 80 * 8 * 128 * 2),
    ("mistral-7b", 7, 2 * 32 * 8 * 128 * 2),
)


@dataclass(frozen=True)
class ModelNeed:
    """The model a pod serves and how its server will lay it over GPUs (immutable: part of ``PodRequest``)."""

    model: str
    framework: str
    params_b: float
    bytes_per_param: float
    precision: str
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    data_parallel: int = 1
    context: int | None = None
    gpu_memory_utilization: float | None = None  # as given (vLLM's, SGLang's, TGI's flag); None: its default
    kv_bytes_per_token: int | None = None  # None: the model's shape is not known
    splits_over_visible: bool = False  # llama.cpp: spreads layers over however many GPUs it gets

    @property
    def parallel(self) -> int | None:
        """GPUs the server will use (TP × PP × DP); None when it uses whatever it is given."""
        return None if self.splits_over_visible else self.tensor_parallel * self.pipeline_parallel * self.data_parallel

    def split(self, gpus: int = 1) -> int:
        """How many GPUs one copy of the weights is spread over."""
        return max(1, gpus) if self.splits_over_visible else self.tensor_parallel * self.pipeline_parallel

    @property
    def weights_gb(self) -> float:
        return self.params_b * self.bytes_per_param

    def kv_gb(self, gpus: int = 1) -> float:
        """KV cache (and activations) per GPU: the context's worth where known, else 20 % of the weights."""
        split = self.split(gpus)
        if self.kv_bytes_per_token and self.context:
            return self.kv_bytes_per_token * self.context / 1e9 / split
        return self.weights_gb * (HEADROOM - 1) / split

    @property
    def need_gb(self) -> float:
        """Weights and KV cache over all its GPUs (one copy)."""
        return self.weights_gb + self.kv_gb() * self.split()

    @property
    def need_per_gpu_gb(self) -> float:
        return self.need_gb / self.split()

    def describe(self) -> str:
        return f"{self.model} in {self.precision} ≈ {self.weights_gb:.0f} GB"

    def short_name(self) -> str:
        return self.model.rstrip("/").rsplit("/", 1)[-1]


# Far above any model served today (Llama-3 405 B, DeepSeek-V3 671 B); a name claiming more (``1e999B``
# spelt out in 400 nines) names no size we can use, and must not reach the arithmetic as inf.
_MAX_PARAMS_B = 100_000.0


def _params_b(model: str) -> float | None:
    best = None
    for experts, number, unit in _PARAMS.findall(model.rstrip("/").rsplit("/", 1)[-1]):
        if len(number) > 12 or len(experts) > 6:
            continue
        size = float(number) / (1000 if unit.lower() == "m" else 1)
        if experts:
            size = _MOE_TOTAL_B.get((experts, number), int(experts) * size)
        if 0 < size <= _MAX_PARAMS_B:
            best = size if best is None else max(best, size)
    return best


def _precision(args: ServingArgs) -> tuple[float, str]:
    lowered = args.model.lower()
    gguf = next(((q, bits) for q, bits in _GGUF_BITS if q in lowered), None)
    if gguf is not None:
        return gguf[1] / 8, gguf[0].upper()
    if args.quantization in _BYTES:
        return _BYTES[args.quantization], args.quantization
    named = next(((q, b) for q, b in _NAME_QUANT if q in lowered), None)
    if named is not None:
        return named[1], named[0].strip("-")
    if args.dtype in _BYTES:
        return _BYTES[args.dtype], ("bf16" if args.dtype in ("auto", "bfloat16") else args.dtype)
    return 2.0, "bf16"


def _kv_per_token(model: str, params_b: float) -> int | None:
    lowered = model.lower()
    return next((kv for family, size, kv in _KV_PER_TOKEN if family in lowered and abs(params_b - size) < 1), None)


def guess_model(containers: Iterable[Mapping[str, Any]]) -> ModelNeed | None:
    """The model a pod serves, or None when no container names a model with a size we can read."""
    for container in containers:
        if not isinstance(container, Mapping):
            continue
        args = serving_args(container)
        params = _params_b(args.model) if args else None
        if args is None or params is None:
            continue
        bytes_per, precision = _precision(args)
        return ModelNeed(
            model=args.model,
            framework=args.framework,
            params_b=params,
            bytes_per_param=bytes_per,
            precision=precision,
            tensor_parallel=args.tensor_parallel,
            pipeline_parallel=args.pipeline_parallel,
            data_parallel=args.data_parallel,
            context=args.context,
            gpu_memory_utilization=args.utilization,
            kv_bytes_per_token=_kv_per_token(args.model, params),
            splits_over_visible=args.splits_over_visible,
        )
    return None


@dataclass(frozen=True)
class MemoryNeed:
    """What one GPU (or slot) must hold for this pod, and where the number comes from."""

    per_gpu_mib: int  # weights + KV cache per GPU, or the declared size
    weights_mib: int | None  # inferred only: the weights alone per GPU, below which nothing starts
    utilization: float  # share of a GPU the server takes (1 when declared)
    source: str  # "declared", or "inferred: <model> in <precision> ≈ N GB"

    @property
    def declared(self) -> bool:
        return self.weights_mib is None


class Asked(Protocol):
    """What :func:`memory_need` reads of a pod's request (``pods.PodRequest``, which holds a
    ``ModelNeed``: named here, not imported, so ``pods`` may import this module)."""

    @property
    def gpus(self) -> int: ...
    @property
    def gpu_memory_mib(self) -> int | None: ...
    @property
    def model(self) -> ModelNeed | None: ...


def memory_need(request: Asked) -> MemoryNeed | None:
    """Per-GPU memory: declared first, else inferred from the model it serves; None when neither says."""
    if request.gpu_memory_mib:
        return MemoryNeed(request.gpu_memory_mib, None, 1.0, "declared")
    model = request.model
    if model is None:
        return None
    gpus = max(1, request.gpus)
    weights = model.weights_gb / model.split(gpus) * MIB_PER_GB
    kv = model.kv_gb(gpus) * MIB_PER_GB
    utilization = model.gpu_memory_utilization or _DEFAULT_UTILIZATION.get(model.framework, 1.0)
    return MemoryNeed(round(weights + kv), round(weights), utilization, f"inferred: {model.describe()}")


@dataclass(frozen=True)
class Fit:
    """How a memory need sits on one GPU or slot of ``memory_mib``."""

    verdict: Literal["fits", "tight", "no"]
    room: float  # share of the wanted KV cache there is room for (1: all of it)
    memory_mib: int

    @property
    def fits(self) -> bool:
        return self.verdict != "no"


def fit_on(need: MemoryNeed, memory_mib: int) -> Fit:
    """``no``: it cannot start (declared, or the weights alone, exceed the memory); ``tight``: the weights
    fit but the KV cache it wants does not fit in what the server takes; ``fits`` otherwise."""
    if need.weights_mib is None:
        return Fit("fits" if need.per_gpu_mib <= memory_mib else "no", 1.0, memory_mib)
    if need.weights_mib > memory_mib:
        return Fit("no", 0.0, memory_mib)
    wanted = need.per_gpu_mib - need.weights_mib
    room = need.utilization * memory_mib - need.weights_mib
    if room >= wanted:
        return Fit("fits", 1.0, memory_mib)
    return Fit("tight", max(0.0, room / wanted) if wanted > 0 else 0.0, memory_mib)
