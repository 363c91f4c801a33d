"""`--policy` means the scoring policy file in every command; its other old meanings still parse.

Each old spelling gives what its new spelling gives, plus one line on stderr naming the new one; a value
that fits neither meaning is one error line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_advisor.cli import build_parser, main
from gpu_advisor.cli.renamed_flags import resolve_replay_policy

REPLAY = ["replay", "--nodes", "nodes.csv", "--pods", "pods.csv"]
BEST = ["topology", "best", "--example", "dgx1-v100", "--gpus", "2"]

# (case, old spelling, new spelling, what stderr says of the old one)
ALIASES = [
    ("replay's policy file", [*REPLAY, "--scoring-policy", "policy.yaml"], [*REPLAY, "--policy", "policy.yaml"],
     "gpu-advisor replay: --scoring-policy is now --policy"),
    ("replay's policy names", [*REPLAY, "--policy", "FGD,BestFit"], [*REPLAY, "--policies", "FGD,BestFit"],
     "gpu-advisor replay: --policy NAMES is now --policies NAMES"),
    ("names in any case", [*REPLAY, "--policy", "fgd, bestfit"], [*REPLAY, "--policies", "fgd, bestfit"],
     "gpu-advisor replay: --policy NAMES is now --policies NAMES"),
    ("names beside a policy file", [*REPLAY, "--policy", "advisor", "--scoring-policy", "policy.yaml"],
     [*REPLAY, "--policies", "advisor", "--policy", "policy.yaml"],
     "gpu-advisor replay: --scoring-policy is now --policy\n"
     "gpu-advisor replay: --policy NAMES is now --policies NAMES"),
    ("topology best's placement set", [*BEST, "--policy", "nvidia-best-effort"],
     [*BEST, "--placement", "nvidia-best-effort"], "gpu-advisor topology best: --policy is now --placement"),
]  # fmt: skip


def _parsed(argv: list[str]) -> dict[str, object]:
    args = build_parser().parse_args(argv)
    if args.command == "replay":
        resolve_replay_policy(args)
        return {"policy": args.policy, "policies": args.policies}
    return {"placement": args.placement}


@pytest.fixture
def policy_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # the cases name policy.yaml as a user in its folder would
    (tmp_path / "policy.yaml").write_text("reserve_whole_gpus: true\n")
    return tmp_path / "policy.yaml"


@pytest.mark.usefixtures("policy_file")
@pytest.mark.parametrize(("old", "new", "said"), [c[1:] for c in ALIASES], ids=[c[0] for c in ALIASES])
def test_an_old_spelling_parses_as_the_new_one_and_says_so(
    capsys: pytest.CaptureFixture[str], old: list[str], new: list[str], said: str
) -> None:
    expected = _parsed(new)
    assert capsys.readouterr().err == ""  # the new spelling is quiet
    assert _parsed(old) == expected
    assert capsys.readouterr().err == said + "\n"


def test_a_file_named_like_a_policy_is_the_policy_file(policy_file: Path) -> None:
    """The value is a file first: `--policy FILE` is what the flag means now."""
    (policy_file.parent / "FGD").write_text("{}\n")
    assert _parsed([*REPLAY, "--policy", "FGD"]) == {"policy": Path("FGD"), "policies": None}


# (case, replay arguments after the inputs, what the one error line says)
REFUSED = [
    ("neither a file nor names", ["--policy", "Tetris"], "--policy: 'Tetris' is neither a file (--policy FILE"),
    ("one name unknown", ["--policy", "FGD,Tetris"], "nor policy names (--policies NAMES: "),
    ("a policy file that is missing", ["--policy", "gone.yaml"], "'gone.yaml' is neither a file"),
    ("names twice", ["--policy", "FGD", "--policies", "BestFit"], "--policies: given twice"),
    ("an unknown name in --policies", ["--policies", "Tetris"], "--policies: no policy 'Tetris'"),
]  # fmt: skip


@pytest.mark.usefixtures("policy_file")
@pytest.mark.parametrize(("more", "message"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_a_value_of_neither_meaning_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], more: list[str], message: str
) -> None:
    assert main([*REPLAY, *more]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu-advisor: error: ") and message in lines[0]


def test_the_policy_file_given_twice_is_refused(policy_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*REPLAY, "--policy", str(policy_file), "--scoring-policy", str(policy_file)]) == 2
    note, error = capsys.readouterr().err.splitlines()
    assert note == "gpu-advisor replay: --scoring-policy is now --policy"
    assert error == "gpu-advisor: error: --policy: given twice (once as --scoring-policy, its old spelling)"


def test_topology_best_refuses_a_placement_it_does_not_know(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*BEST, "--policy", "tightest"])
    assert exited.value.code == 2
    assert "argument --policy: invalid choice: 'tightest'" in capsys.readouterr().err
