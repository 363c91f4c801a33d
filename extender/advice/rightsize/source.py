"""Where a server's right-sizing history comes from: set by ``gpu-advisor serve`` (Prometheus, or the
simulated cluster's synthetic history), read by ``GET /v1/rightsize``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from extender.advice.rightsize.usage import GpuSeries

__all__ = ["HistorySource"]


@dataclass(frozen=True)
class HistorySource:
    read: Callable[[float, float], list[GpuSeries]]  # (end, window seconds) → the GPU series
    pods: Callable[[], Iterable[Mapping[str, Any]]]  # Pod objects now (owners, latency-sensitive marks)
    name: str
