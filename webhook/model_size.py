"""How much GPU memory a model server will need, read from its containers' command, args and env.

Recognised: vLLM (``vllm serve MODEL``, ``--model``), SGLang (``--model-path``), TGI (``--model-id``,
``MODEL_ID``), and generic ``MODEL``/``MODEL_NAME`` env. The parameter count comes from the model's name
(``Llama-3-70B`` → 70 B, ``Qwen2.5-0.5B`` → 0.5 B, ``Mixtral-8x7B`` → 46.7 B); bytes per parameter from
``--dtype`` and ``--quantization`` or the name (fp32 4, fp16/bf16 2, fp8/int8 1, int4/AWQ/GPTQ 0.5).

    weights (GB) = parameters (B) × bytes per parameter
    need (GB)    = weights × 1.2      # KV cache, activations and CUDA context: 20 % on top
    per GPU      = need / tensor-parallel size
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from extender.model.pods import MODEL_NAME_ENV

__all__ = ["HEADROOM", "ModelGuess", "guess_model", "mig_profiles_for"]

HEADROOM = 1.2
_PARAMS = re.compile(r"(?<![a-z0-9.])(?:(\d+)x)?(\d+(?:\.\d+)?)([bm])(?![a-z0-9])", re.IGNORECASE)
_MOE_TOTAL_B = {("8", "7"): 46.7, ("8", "22"): 141.0}  # Mixtral: experts share attention weights
_BYTES = {
    "float32": 4.0,
    "fp32": 4.0,
    "float": 4.0,
    "float16": 2.0,
    "fp16": 2.0,
    "half": 2.0,
    "bfloat16": 2.0,
    "bf16": 2.0,
    "auto": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "awq": 0.5,
    "gptq": 0.5,
    "int4": 0.5,
    "bitsandbytes": 0.5,
    "nf4": 0.5,
    "marlin": 0.5,
    "gguf": 0.5,
}
_NAME_QUANT = (
    ("awq", 0.5),
    ("gptq", 0.5),
    ("int4", 0.5),
    ("4bit", 0.5),
    ("-q4", 0.5),
    ("fp8", 1.0),
    ("int8", 1.0),
    ("8bit", 1.0),
)
_MODEL_FLAGS = ("--model", "--model-path", "--model-id", "--model-name-or-path")
_TP_FLAGS = ("--tensor-parallel-size", "-tp", "--tp", "--tp-size", "--num-shard")

# Standard MIG profiles by the GPU's memory (GB): what a small model could ask for instead.
_MIG_BY_MEMORY = {
    40: ("1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    80: ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    94: ("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
    141: ("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
}


@dataclass(frozen=True)
class ModelGuess:
    model: str
    framework: str
    params_b: float
    bytes_per_param: float
    precision: str
    tensor_parallel: int
    gpu_memory_utilization: float | None  # vLLM's --gpu-memory-utilization, when given

    @property
    def weights_gb(self) -> float:
        return self.params_b * self.bytes_per_param

    @property
    def need_gb(self) -> float:
        return self.weights_gb * HEADROOM

    @property
    def need_per_gpu_gb(self) -> float:
        return self.need_gb / max(1, self.tensor_parallel)

    def describe(self) -> str:
        return f"{self.model} in {self.precision} ≈ {self.weights_gb:.0f} GB"


def _flag(args: Sequence[str], names: Iterable[str]) -> str | None:
    names = tuple(names)
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def _words(container: Mapping[str, Any]) -> list[str]:
    words: list[str] = []
    for part in (container.get("command") or []) + (container.get("args") or []):
        # `sh -c "vllm serve …"` puts the whole command line in one argument.
        words.extend(str(part).split())
    return words


def _params_b(model: str) -> float | None:
    best = None
    for experts, number, unit in _PARAMS.findall(model.rsplit("/", 1)[-1]):
        size = float(number) / (1000 if unit.lower() == "m" else 1)
        if experts:
            size = _MOE_TOTAL_B.get((experts, number), int(experts) * size)
        best = size if best is None else max(best, size)
    return best


def guess_model(containers: Iterable[Mapping[str, Any]]) -> ModelGuess | None:
    """The model a pod serves, or None when no container names a model with a size we can read."""
    for container in containers:
        words = _words(container)
        env = {
            str(e.get("name")): str(e.get("value", "")) for e in container.get("env") or [] if isinstance(e, Mapping)
        }
        text = " ".join([*words, str(container.get("image", ""))]).lower()
        framework = next((f for f in ("vllm", "sglang", "text-generation") if f in text), "model server")
        model = _flag(words, _MODEL_FLAGS)
        if model is None and "serve" in words:
            after = words[words.index("serve") + 1 :]
            model = next((w for w in after if not w.startswith("-")), None)
        if model is None:
            model = next((env[k] for k in MODEL_NAME_ENV if env.get(k)), None)
        if not model:
            continue
        params = _params_b(model)
        if params is None:
            continue
        quant = (_flag(words, ("--quantization", "-q", "--quantize")) or env.get("QUANTIZE") or "").lower()
        dtype = (_flag(words, ("--dtype",)) or env.get("DTYPE") or "").lower()
        lowered = model.lower()
        if quant in _BYTES:
            bytes_per, precision = _BYTES[quant], quant
        elif (named := next(((q, b) for q, b in _NAME_QUANT if q in lowered), None)) is not None:
            bytes_per, precision = named[1], named[0].strip("-")
        elif dtype in _BYTES:
            bytes_per, precision = _BYTES[dtype], ("bf16" if dtype in ("auto", "bfloat16") else dtype)
        else:
            bytes_per, precision = 2.0, "bf16"
        tp_text = _flag(words, _TP_FLAGS) or env.get("NUM_SHARD")
        try:
            tp = max(1, int(tp_text)) if tp_text else 1
        except ValueError:
            tp = 1
        util_text = _flag(words, ("--gpu-memory-utilization", "--mem-fraction-static"))
        try:
            util = float(util_text) if util_text else None
        except ValueError:
            util = None
        return ModelGuess(model, framework, params, bytes_per, precision, tp, util)
    return None


def mig_profiles_for(gpu_memory_gb: float) -> tuple[str, ...]:
    """The standard MIG profiles of a MIG-capable GPU of about this much memory ((): not MIG-capable)."""
    for size, profiles in sorted(_MIG_BY_MEMORY.items()):
        if math.isclose(gpu_memory_gb, size, rel_tol=0.1):
            return profiles
    return ()


def profile_memory_gb(profile: str) -> float:
    """``1g.10gb`` → 10."""
    m = re.search(r"\.(\d+)gb", profile)
    return float(m.group(1)) if m else 0.0
