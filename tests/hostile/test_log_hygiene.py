"""Logs cannot be forged by what clients send, nor flooded by one repeating cause."""

from __future__ import annotations

import logging

import pytest

from gpu_advisor.logs import LogHygiene, escape_controls


@pytest.mark.parametrize(
    ("raw", "logged"),
    [
        ("ml/train", "ml/train"),
        ("evil\nINFO forged line", "evil\\nINFO forged line"),
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("nul\x00 and del\x7f", "nul\\x00 and del\\x7f"),
        ("line\u2028separator", "line\\u2028separator"),
        ("ünïcödé names stay", "ünïcödé names stay"),
    ],
)
def test_control_characters_are_escaped(raw: str, logged: str) -> None:
    assert escape_controls(raw) == logged


def record(msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, msg, args, None)


def test_a_repeating_cause_is_logged_five_times_a_minute_then_counted() -> None:
    now = [0.0]
    hygiene = LogHygiene(per_window=5, window_s=60, clock=lambda: now[0])
    passed = [hygiene.filter(record("socket.accept() out of system resource")) for _ in range(20_000)]
    assert sum(passed) == 5
    other = record("a different cause %s", "x")
    assert hygiene.filter(other) and other.getMessage() == "a different cause x"
    now[0] = 61.0
    summary = record("socket.accept() out of system resource")
    assert hygiene.filter(summary)
    assert summary.getMessage() == "socket.accept() out of system resource [19995 more like this in the last 60 s]"


def test_arguments_are_escaped_after_formatting() -> None:
    hygiene = LogHygiene()
    line = record("%s %s/%s: %s", "Pod", "ml", "evil\r\nname", "codes")
    assert hygiene.filter(line) and line.getMessage() == "Pod ml/evil\\r\\nname: codes"
