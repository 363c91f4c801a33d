"""What a plan on a served model reads besides the model: the objects it rebuilds and judges movable
(where they come from is the source's business: ``extender.sources.defrag_look``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DefragLook", "LookSource"]


@dataclass(frozen=True)
class DefragLook:
    nodes: Sequence[Mapping[str, Any]]  # Node objects, rebuilt after each move
    pods: Sequence[Mapping[str, Any]]  # bound GPU pods (pending ones are not moved)
    budgets: Sequence[Mapping[str, Any]] = ()  # PodDisruptionBudget objects


LookSource = Callable[[], DefragLook]
