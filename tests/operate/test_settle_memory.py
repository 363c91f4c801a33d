"""Once the model is built, glibc's allocator is set for a long-lived server and the freed heap of each
telemetry refresh is handed back to the system."""

from __future__ import annotations

import gc
import threading
import time

import pytest

from extender.cluster.state import ClusterState
from extender.http.advisor import Advisor
from extender.model.readings import TelemetryBoard
from extender.scoring import ScoringPolicy
from gpu_advisor import memory


class _Libc:
    """glibc's two calls, recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int] | tuple[str, int, int]] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.calls.append(("malloc_trim", pad))
        return 0


def _settled(monkeypatch: pytest.MonkeyPatch, board: TelemetryBoard, libc: _Libc | None) -> None:
    monkeypatch.setattr(memory, "_glibc", lambda: libc)
    advisor = Advisor(ClusterState("t"), board, ScoringPolicy(), clock=lambda: 1_796_000_000.0)
    try:
        memory.settle_memory([advisor], trim_every_s=0)
    finally:
        gc.unfreeze()
        gc.set_threshold(700, 10, 10)


def test_two_arenas_serve_the_threads_and_glibc_keeps_its_own_mapping_threshold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    libc = _Libc()
    _settled(monkeypatch, TelemetryBoard(60), libc)
    # M_ARENA_MAX is -8 in malloc.h; no M_MMAP_THRESHOLD (-3); what building the model freed is handed back
    assert libc.calls == [("mallopt", -8, 2), ("malloc_trim", 0)]


def test_a_refresh_is_followed_by_a_trim_of_the_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    board = TelemetryBoard(60)
    libc = _Libc()
    _settled(monkeypatch, board, libc)
    board.replace({}, 1_796_000_000.0)
    board.replace({}, 1_796_000_010.0)
    assert [c for c in libc.calls if c[0] == "malloc_trim"] == [("malloc_trim", 0)] * 3  # once settled, then each


def test_without_glibc_nothing_is_set_and_nothing_trimmed(monkeypatch: pytest.MonkeyPatch) -> None:
    board = TelemetryBoard(60)
    _settled(monkeypatch, board, None)
    board.replace({}, 1_796_000_000.0)  # no listener to call


def test_glibc_is_found_where_there_is_one() -> None:
    libc = memory._glibc()
    assert libc is None or libc.malloc_trim(0) in (0, 1)  # 1: memory was released


def test_the_heap_is_trimmed_every_few_seconds_on_a_thread_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    libc = _Libc()
    monkeypatch.setattr(memory, "_glibc", lambda: libc)
    try:
        memory.settle_memory([], trim_every_s=0.02)
        memory.settle_memory([], trim_every_s=0.02)  # settled again: still one thread
        deadline = time.monotonic() + 5
        while len([c for c in libc.calls if c[0] == "malloc_trim"]) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [t.name for t in threading.enumerate()].count("malloc-trim") == 1
    finally:
        memory.stop_trimming()
        gc.unfreeze()
        gc.set_threshold(700, 10, 10)
    trims = len([c for c in libc.calls if c[0] == "malloc_trim"])
    assert trims >= 5  # the two settles' own, then the thread's
    time.sleep(0.1)
    assert len([c for c in libc.calls if c[0] == "malloc_trim"]) == trims, "stopped"
    assert memory.TRIM_EVERY_S == 5.0


def test_settled_again_at_another_pace_the_trim_keeps_the_new_one_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A trimmer already sleeping out a long interval (an earlier settle in the same process) must not
    hold back the new pace: it is replaced, and still one thread trims."""
    libc = _Libc()
    monkeypatch.setattr(memory, "_glibc", lambda: libc)
    try:
        memory.settle_memory([], trim_every_s=60)  # asleep for a minute
        memory.settle_memory([], trim_every_s=0.02)
        deadline = time.monotonic() + 5
        while len([c for c in libc.calls if c[0] == "malloc_trim"]) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [t.name for t in threading.enumerate()].count("malloc-trim") == 1
    finally:
        memory.stop_trimming()
        gc.unfreeze()
        gc.set_threshold(700, 10, 10)
    # two settles' own trims (2), then the new pace's: at least 3 more within the 5 s, not after 60 s
    assert len([c for c in libc.calls if c[0] == "malloc_trim"]) >= 5
