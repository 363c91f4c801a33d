"""A figure the docs quote from a command the docs show is what that command prints now.

Each entry of ``FROM_COMMANDS`` is one command as a page shows it (its ``TRACES`` folder and the files an
earlier line of the block wrote stand for the test's), where the page quotes its figures (a pattern whose
groups are the figures as written there) and where the output prints them (a pattern with as many
groups). Only commands cheap enough to run in the test are here (about a second each); the page must
still show the command, so a changed command is caught too. The trace folder missing skips (CI: fails).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from extender.advice.replay import openb
from gpu_advisor.cli import main
from gpu_advisor.cli.scheduler_config import scheduler_config

REPO = Path(__file__).resolve().parents[2]
OUTAGE_PAGE = "docs/deploy/placement-quality.md"
SAMPLE = "TRACES/realk8s-seed42"
UNALLOCATED = r"unallocated GPU % at 100 % arrived: ([\d.]+) with the outage, ([\d.]+) without"


@dataclass(frozen=True)
class FromCommand:
    page: str
    command: str  # as the page shows it, continuation lines joined
    on_page: str  # its groups: the figures as the page quotes them
    in_output: str  # as many groups: the figures as the command prints them


FROM_COMMANDS = [
    FromCommand(
        OUTAGE_PAGE,
        f"gpu-advisor replay --pods {SAMPLE}/pods.yaml --nodes {SAMPLE}/nodes.json --orders {SAMPLE}/orders "
        "--seeds 42 --scheduler-config /tmp/waits.yaml --outage 40%:140",
        r"\| the check's own input [^|]+\| not ignorable \|[^\n]*\| ([\d.]+) / ([\d.]+) \|",
        UNALLOCATED,
    ),
    FromCommand(
        OUTAGE_PAGE,
        f"gpu-advisor replay --pods {SAMPLE}/pods.yaml --nodes {SAMPLE}/nodes.json --orders {SAMPLE}/orders "
        "--seeds 42 --scheduler-config /tmp/ignorable.yaml --outage 40%:140",
        r"\| the same \| `ignorable: true` \| \d+ \| \d+ \(\d+\) \| (\d+) / \*\*(\d+)\*\* \| ([\d.]+) / ([\d.]+) \|",
        r"of them on GPUs already taken [^:]+: ([\d.]+) per run[\s\S]*?nodes over-committed: ([\d.]+) per run"
        r"[\s\S]*?" + UNALLOCATED,
    ),
]


def _shown(page: str) -> str:
    """The page's text with console continuation lines joined, as the commands read."""
    return re.sub(r" \\\n\s+", " ", (REPO / page).read_text(encoding="utf-8"))


def _profiles(folder: Path) -> dict[str, str]:
    """The files the block's first lines write: the printed profile, its extender entry as printed
    (waits) and made ignorable (what its ``sed`` line does)."""
    printed = yaml.safe_load(scheduler_config())
    written = {}
    for name, ignorable in (("waits", False), ("ignorable", True)):
        printed["extenders"][0]["ignorable"] = ignorable
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(printed))
        written[f"/tmp/{name}.yaml"] = str(path)
    return written


def _same(quoted: str, printed: str) -> bool:
    """Equal as numbers (the page writes a count as 15 where the output says 15.0)."""
    return float(quoted) == float(printed)


@pytest.mark.parametrize("entry", FROM_COMMANDS, ids=lambda e: e.command.split("--scheduler-config ")[1])
def test_a_quoted_figure_is_what_its_command_prints(
    entry: FromCommand, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = _shown(entry.page)
    assert f"$ {entry.command}" in shown, f"{entry.page} no longer shows `{entry.command}`"
    quoted = re.findall(entry.on_page, shown)
    assert len(quoted) == 1, f"{entry.page}: {entry.on_page} quotes {quoted}"
    traces = openb.traces_dir()
    if not (traces / SAMPLE.removeprefix("TRACES/") / "pods.yaml").is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{traces} is missing (set {openb.TRACES_ENV})")
        pytest.skip(f"{traces} is missing")
    command = entry.command.replace("TRACES", str(traces))
    for shown_path, path in _profiles(tmp_path).items():
        command = command.replace(shown_path, path)
    assert main([*shlex.split(command)[1:], "--jobs", "1"]) == 0
    printed = re.search(entry.in_output, capsys.readouterr().out)
    assert printed is not None, f"`{entry.command}` no longer prints {entry.in_output}"
    pairs = list(zip(quoted[0], printed.groups(), strict=True))
    assert all(_same(q, p) for q, p in pairs), f"{entry.page} quotes {quoted[0]}, the command prints {printed.groups()}"
