"""``gpu-advisor replay --defrag BUDGET``: every policy also runs with moves, reported beside itself."""

from __future__ import annotations

from typing import Any

from extender.advice.replay.moves import DEFRAG_SUFFIX
from extender.advice.replay.openb import ReplayInputError

__all__ = ["add_defrag_flag", "with_moves"]


def add_defrag_flag(replay: Any) -> None:
    replay.add_argument(
        "--defrag",
        metavar="BUDGET",
        help="also run each policy with up to BUDGET pod moves per 100 arrivals (single-GPU and share pods move: "
        "a few at once when an arriving pod fits nowhere, and one at a time to lower fragmentation once 93 %% of "
        "the GPUs are in use), reported beside the runs without moves",
    )


def with_moves(policies: list[str], budget: str | None) -> list[str]:
    """With --defrag B, every policy runs twice: as asked, and as NAME+defragB (B moves per 100 arrivals)."""
    if budget is None:
        return policies
    if not budget.strip().isdigit() or int(budget) < 1:
        raise ReplayInputError(f"--defrag: {budget!r} is not a number of moves per 100 arrivals (1 or more)")
    return [*policies, *(f"{p}{DEFRAG_SUFFIX}{int(budget)}" for p in policies)]
