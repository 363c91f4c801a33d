"""What a part of the replica reports when it is degraded, and what a live source says about itself: the
words both the cluster model (which holds its source's health) and ``health`` (which reads the model to
say whether the replica is ready) use, kept apart so neither imports the other."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Degradation", "SourceHealth"]


@dataclass(frozen=True)
class Degradation:
    part: str  # what is degraded: "api watch (pods)", "telemetry", "cluster model"
    reason: str  # for a person
    unready: bool  # True: the replica must not answer (see ``health``)


class SourceHealth(Protocol):
    """What a live source says about itself (the API server watch)."""

    def degradations(self, now: float) -> Sequence[Degradation]: ...
