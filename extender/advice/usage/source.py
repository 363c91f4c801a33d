"""Where a server's usage history comes from: set by ``gpu-advisor serve`` (Prometheus, or the
simulated cluster's synthetic history), read by ``GET /v1/usage``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from extender.advice.usage.pods import PodUsage

__all__ = ["UsageSource"]


@dataclass(frozen=True)
class UsageSource:
    read: Callable[[float, float], list[PodUsage]]  # (end, window seconds) → the pods and their use
    name: str
