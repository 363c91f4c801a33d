"""``benchmarks/extender.py`` runs at any ``--rounds``: with four rounds or fewer every call is a pod
shape's first (cold), so there is no steady-state figure to print, and it says so instead of failing."""

from __future__ import annotations

import sys

import pytest

from benchmarks import extender as bench


def test_two_rounds_print_the_cold_calls_and_no_steady_state(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["extender.py", "--nodes", "40", "--rounds", "2"])
    bench.main()
    out = capsys.readouterr().out
    assert out.count("no steady-state calls") == 3  # one per candidate count: 100, 500, 5000 (capped at 40)
    assert "-" in out.splitlines()[4].split()  # the steady p50 column of the first row


def test_a_quantile_of_nothing_is_not_a_number_and_prints_as_a_dash() -> None:
    assert bench.ms([], 0.99) == "-"
    assert bench.ms([0.001, 0.003], 0.5) == "2.00"  # the median of 1 ms and 3 ms
    assert bench.ms([0.001, 0.003], 1.0) == "3.00"
