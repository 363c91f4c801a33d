"""What a GPU holding memory is doing, in words that are true: "busy" when its SMs work, "idle but
memory held" only when they are near zero, and "held by something we don't know about" only when
no pod the advisor knows of (the cluster model's or the exporter's attribution) holds it."""

from __future__ import annotations

from dataclasses import dataclass

from extender.model.readings import GpuReading

__all__ = ["IDLE_SM_PCT", "UNKNOWN_HOLDER", "GpuUse", "gpu_use"]

IDLE_SM_PCT = 5.0  # SM activity at or below this is "near zero"
UNKNOWN_HOLDER = "something we don't know about"
_GIB = 1024


def _gib(mib: float) -> str:
    return f"{mib / _GIB:.0f} GiB" if mib >= _GIB else f"{mib:.0f} MiB"


@dataclass(frozen=True)
class GpuUse:
    state: str  # "busy", "idle but memory held", or "memory free"
    holder: str | None  # the pod holding it, None when nobody known does
    text: str  # e.g. "GPU 3 is busy (SM 88%, 39 GiB VRAM) held by something we don't know about"


def gpu_use(gpu: int, reading: GpuReading, holder: str | None) -> GpuUse:
    """``holder``: the pod the cluster model places on this GPU, if any; the exporter's attribution
    (``reading.pod``) counts as known too."""
    who = holder or reading.pod
    used = reading.memory_used_mib or 0.0
    sm = reading.sm_util
    if used <= 0:
        state = "memory free"
    elif sm is not None and sm <= IDLE_SM_PCT:
        state = "idle but memory held"
    else:
        state = "busy"
    sm_text = "SM unknown" if sm is None else f"SM {sm:.0f}%"
    by = f"by {who or UNKNOWN_HOLDER}"
    if state == "idle but memory held":
        text = f"GPU {gpu} is idle but memory held ({_gib(used)}, {sm_text}) {by}"
    elif state == "busy":
        text = f"GPU {gpu} is busy ({sm_text}, {_gib(used)} VRAM) held {by}"
    else:
        text = f"GPU {gpu} has its memory free ({sm_text})"
    return GpuUse(state, who, text)
