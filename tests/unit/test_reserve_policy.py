"""The reserve's policy keys: off by default, a hold limit in seconds above 0, bad values refused at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.scoring import PolicyError, ScoringPolicy
from extender.sources.policy_file import load_policy
from gpu_advisor.cli import main


def test_the_reserve_is_off_by_default_and_a_hold_lasts_300_seconds_at_most() -> None:
    policy = ScoringPolicy()
    assert policy.reserve_whole_gpus is False
    assert policy.reserve_hold_limit_s == 300.0


def test_the_reserve_and_its_hold_limit_are_read_from_the_policy_file(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("reserve_whole_gpus: true\nreserve_hold_limit_s: 90.5\n")
    policy = load_policy(path)
    assert policy.reserve_whole_gpus is True and policy.reserve_hold_limit_s == 90.5


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("0", "greater than 0"),
        ("-30", "greater than 0"),
        ("soon", "valid number"),
        (".inf", "finite number"),
        (".nan", "finite number"),
    ],
)
def test_a_hold_limit_that_is_not_seconds_above_zero_is_refused(tmp_path: Path, value: str, problem: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(f"reserve_hold_limit_s: {value}\n")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert "reserve_hold_limit_s" in str(caught.value) and problem in str(caught.value)


def test_serve_refuses_a_bad_hold_limit_at_start_up_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("reserve_hold_limit_s: 0\n")
    assert main(["serve", "--policy", str(path), "--host", "127.0.0.1", "--port", "0"]) == 2
    captured = capsys.readouterr()
    problem = "reserve_hold_limit_s: Input should be greater than 0"
    assert captured.err.strip() == f"gpu-advisor: error: policy {path}: {problem}"
