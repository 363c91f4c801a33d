"""The words every reader of a pod shares: its GPU resource names, the env that names a served model,
and the error a pod that cannot be read raises. A leaf: ``pods`` reads a pod with ``compute``,
``gpu_share``, ``needs`` and ``serving``, and they all raise and name things with these, so they import
them from here, never from ``pods`` (which re-exports them where callers have always found them)."""

from __future__ import annotations

from extender.errors import InputError

__all__ = ["GPU_RESOURCE", "MIG_PREFIX", "MODEL_ENV", "MODEL_NAME_ENV", "PodSpecError", "ShareSpecError"]

GPU_RESOURCE = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"
# Env vars that name the model a container serves, in the order model servers read them (TGI: MODEL_ID)...
MODEL_NAME_ENV = ("MODEL_ID", "MODEL", "MODEL_NAME", "MODEL_PATH", "HF_MODEL_ID")
# ...and all the env the advisor reads to size it (TGI's QUANTIZE, DTYPE, NUM_SHARD); other values may be secrets.
MODEL_ENV = (*MODEL_NAME_ENV, "QUANTIZE", "DTYPE", "NUM_SHARD")


class PodSpecError(InputError):
    """A pod's GPU request or gpu-advisor annotation cannot be read; the message says which."""


class ShareSpecError(PodSpecError):
    """A pod's shared-GPU request is malformed (``gpu_share``); the message names the field."""
