"""`gpu-advisor topology best`: the placement engine at a terminal, as text or JSON, exit 3 when no set exists."""

from __future__ import annotations

import json

import pytest

from gpu_advisor.cli import main


def test_cli_best_prints_gpus_score_and_leaves_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "topology",
                "best",
                "--example",
                "dgx1-v100",
                "--gpus",
                "2",
                "--free",
                "0,2,4,5",
                "--placement",
                "nvidia-best-effort",
                "--json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["gpus"] == [0, 2] and doc["score"] == 120 and doc["leaves"]["free"] == [4, 5]


def test_cli_best_accepts_a_hand_written_machine(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    machine = tmp_path / "box.json"
    machine.write_text(
        json.dumps(
            {
                "gpus": [{"index": 0}, {"index": 1}, {"index": 2}],
                "links": [
                    {"a": 0, "b": 1, "nvlinks": 0, "pcie": "SYS"},
                    {"a": 1, "b": 2, "nvlinks": 4, "pcie": "PIX"},
                    {"a": 0, "b": 2, "nvlinks": 0, "pcie": "SYS"},
                ],
            }
        )
    )
    assert main(["topology", "best", str(machine), "--gpus", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpus"] == [1, 2]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--gpus", "9"], "asked for 9 GPUs but only 8 of 8 are free"),
        (["--gpus", "2", "--free", "0,1", "--required", "4"], "required GPU 4 is not free"),
        (["--gpus", "1", "--required", "1,2"], "2 GPUs are required but only 1 asked for"),
    ],
)
def test_cli_best_exits_3_with_one_line_when_no_set_exists(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["topology", "best", "--example", "dgx1-v100", *argv]) == 3
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
