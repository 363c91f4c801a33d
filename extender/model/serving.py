"""What a model server's container says about the model it serves: its name and the flags that size it.

Read from ``command`` + ``args`` (a ``sh -c "…"`` line is split into words) and the env the servers read.
The flag names are each server's own, from their documentation:

- vLLM ``vllm serve MODEL`` / ``--model``: ``--tensor-parallel-size``/``-tp``, ``--pipeline-parallel-size``
  /``-pp``, ``--data-parallel-size``/``-dp``, ``--dtype``, ``--quantization``/``-q``, ``--max-model-len``,
  ``--gpu-memory-utilization``.
- SGLang ``--model-path``: ``--tp-size``/``--tp``, ``--pp-size``, ``--dp-size``/``--dp``,
  ``--context-length``, ``--mem-fraction-static``.
- TGI ``--model-id``/``MODEL_ID``: ``--num-shard``/``NUM_SHARD``, ``--quantize``/``QUANTIZE``, ``--dtype``,
  ``--max-total-tokens``, ``--cuda-memory-fraction`` (default 1.0).
- TensorRT-LLM ``trtllm-serve MODEL``: ``--tp_size``, ``--pp_size``, ``--max_seq_len``; Triton's
  ``launch_triton_server.py --world_size``.
- llama.cpp ``llama-server -m FILE.gguf`` / ``--hf-repo``: ``-c``/``--ctx-size``; it splits layers over every
  GPU it sees, so it has no parallel size of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from extender.model.pod_terms import MODEL_NAME_ENV

__all__ = ["ServingArgs", "serving_args"]

_FRAMEWORKS = (
    ("vllm", "vllm"),
    ("sglang", "sglang"),
    ("text-generation", "tgi"),
    ("trtllm", "tensorrt-llm"),
    ("tensorrt", "tensorrt-llm"),
    ("triton", "tensorrt-llm"),
    ("llama-server", "llama.cpp"),
    ("llama.cpp", "llama.cpp"),
    ("llama-cpp", "llama.cpp"),
)
_MODEL = ("--model", "--model-path", "--model-id", "--model-name-or-path", "--hf-repo")
# Short flags only llama.cpp gives these meanings (`python -m …` and `sh -c …` are something else).
_LLAMA_CPP_MODEL = ("-m", "-hf")
_LLAMA_CPP_CONTEXT = ("--ctx-size", "-c")
_TP = ("--tensor-parallel-size", "-tp", "--tp", "--tp-size", "--tp_size", "--num-shard", "--world_size")
_PP = ("--pipeline-parallel-size", "-pp", "--pp-size", "--pp_size")
_DP = ("--data-parallel-size", "-dp", "--dp-size", "--dp")
_CONTEXT = ("--max-model-len", "--context-length", "--max-total-tokens", "--max_seq_len")
_UTILIZATION = ("--gpu-memory-utilization", "--mem-fraction-static", "--cuda-memory-fraction")


@dataclass(frozen=True)
class ServingArgs:
    framework: str  # vllm, sglang, tgi, tensorrt-llm, llama.cpp, or "model server"
    model: str
    quantization: str  # lower-case, "" when not given
    dtype: str
    tensor_parallel: int
    pipeline_parallel: int
    data_parallel: int
    context: int | None  # tokens one sequence may hold, where given
    utilization: float | None  # share of each GPU the server takes, where given
    splits_over_visible: bool  # llama.cpp: uses every GPU it is given, whatever the count


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
    for key in ("command", "args"):
        parts = container.get(key)
        for part in parts if isinstance(parts, list) else []:
            # `sh -c "vllm serve …"` puts the whole command line in one argument.
            words.extend(str(part).split())
    return words


# Bounds on what a flag may say: no server spans a million GPUs or a 2^31-token context, and a fraction
# of a GPU is in (0, 1]. A value outside them (inf, NaN, 400 nines) is read as not given, never as a number
# that overflows the arithmetic downstream.
_MAX_WHOLE = 2**31 - 1
_MAX_PARALLEL = 2**20


def _number(text: str | None, kind: type[int] | type[float]) -> Any:
    if not text or len(text) > 24:
        return None
    try:
        value = kind(text)
    except ValueError:
        return None
    if kind is float:
        return value if 0 < value <= 1 else None  # False for NaN as well
    return value if 0 < value <= _MAX_WHOLE else None


def _positive(text: str | None) -> int:
    value = _number(text, int)
    return value if isinstance(value, int) and value <= _MAX_PARALLEL else 1


def _model_name(words: list[str], env: Mapping[str, str], framework: str) -> str | None:
    model = _flag(words, _MODEL) or (_flag(words, _LLAMA_CPP_MODEL) if framework == "llama.cpp" else None)
    if model is None:
        for command in ("serve", "trtllm-serve"):
            if command in words:
                after = words[words.index(command) + 1 :]
                model = next((w for w in after if not w.startswith("-")), None)
                break
    return model or next((env[k] for k in MODEL_NAME_ENV if env.get(k)), None)


def serving_args(container: Mapping[str, Any]) -> ServingArgs | None:
    """The model one container serves and its sizing flags; None when it names no model."""
    words = _words(container)
    listed = container.get("env")
    entries = listed if isinstance(listed, list) else []
    env = {str(e.get("name")): str(e.get("value", "")) for e in entries if isinstance(e, Mapping)}
    text = " ".join([*words, str(container.get("image", ""))]).lower()
    framework = next((name for word, name in _FRAMEWORKS if word in text), "model server")
    model = _model_name(words, env, framework)
    if not model:
        return None
    context = _flag(words, _CONTEXT) or (_flag(words, _LLAMA_CPP_CONTEXT) if framework == "llama.cpp" else None)
    return ServingArgs(
        framework=framework,
        model=model,
        quantization=(_flag(words, ("--quantization", "-q", "--quantize")) or env.get("QUANTIZE") or "").lower(),
        dtype=(_flag(words, ("--dtype",)) or env.get("DTYPE") or "").lower(),
        tensor_parallel=_positive(_flag(words, _TP) or env.get("NUM_SHARD")),
        pipeline_parallel=_positive(_flag(words, _PP)),
        data_parallel=_positive(_flag(words, _DP)),
        context=_number(context, int),
        utilization=_number(_flag(words, _UTILIZATION), float),
        splits_over_visible=framework == "llama.cpp",
    )
