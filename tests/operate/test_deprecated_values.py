"""A value the chart keeps only so old values files still install says, when set, that it does nothing."""

from __future__ import annotations

from tests.operate.chart import notes

DRA_NOTE = "scheduler.dra is deprecated and has no effect"


def test_scheduler_dra_set_is_named_deprecated_in_the_notes() -> None:
    assert DRA_NOTE in notes({"scheduler": {"dra": True}})


def test_scheduler_dra_left_alone_says_nothing() -> None:
    assert DRA_NOTE not in notes()
