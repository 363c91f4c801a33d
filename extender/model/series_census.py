"""A count of the series one telemetry poll read: how many found their node and GPU, and what the
others look like, so no series is dropped without a trace."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from extender.model.series_map import SeriesMiss

__all__ = ["SeriesCensus", "Unmatched"]

MAX_EXAMPLES = 5


@dataclass(frozen=True)
class Unmatched:
    metric: str
    labels: Mapping[str, str]
    reason: str
    fix: str


@dataclass
class SeriesCensus:
    matched: int = 0
    unmatched: int = 0
    examples: list[Unmatched] = field(default_factory=list)  # the first series of each unmatched shape
    shapes: dict[tuple[str, ...], int] = field(default_factory=dict)  # unmatched series per label shape
    via: dict[str, int] = field(default_factory=dict)  # matched series per label that named the node

    def match(self, via: str) -> None:
        self.matched += 1
        self.via[via] = self.via.get(via, 0) + 1

    def miss(self, metric: str, labels: Mapping[str, str], miss: SeriesMiss) -> bool:
        """Count an unmatched series; True when it is the first of its label shape in this poll."""
        self.unmatched += 1
        first = miss.shape not in self.shapes
        self.shapes[miss.shape] = self.shapes.get(miss.shape, 0) + 1
        if first and len(self.examples) < MAX_EXAMPLES:
            self.examples.append(Unmatched(metric, dict(labels), miss.reason, miss.fix))
        return first
