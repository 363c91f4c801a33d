"""Once the model is built, the freed heap of each telemetry refresh is handed back to the system."""

from __future__ import annotations

import gc

import pytest

from extender.cluster.state import ClusterState
from extender.http.advisor import Advisor
from extender.model.readings import TelemetryBoard
from extender.scoring import ScoringPolicy
from gpu_advisor import memory


def test_a_refresh_is_followed_by_a_trim_of_the_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    trims: list[int] = []
    monkeypatch.setattr(memory, "_malloc_trim", lambda: lambda: trims.append(1))
    board = TelemetryBoard(60)
    advisor = Advisor(ClusterState("t"), board, ScoringPolicy(), clock=lambda: 1_796_000_000.0)
    try:
        memory.settle_memory([advisor])
        board.replace({}, 1_796_000_000.0)
        board.replace({}, 1_796_000_010.0)
    finally:
        gc.unfreeze()
        gc.set_threshold(700, 10, 10)
    assert trims == [1, 1]


def test_the_trim_is_glibcs_where_there_is_one() -> None:
    trim = memory._malloc_trim()
    assert trim is None or trim() is None  # returns nothing, whatever it freed
