"""Runs the docs' ```console blocks and compares what they print (a Sybil evaluator).

A block is a sequence of `$ command` lines, each followed by the output it must print; a line ending in
`\\` continues the command. The rules, also stated in docs/writing-docs.md:

- Commands run with bash (`pipefail`) from a scratch folder holding links to the repository's
  `examples/`, `tests/` and `manifests/`, with the test environment's `bin/` first on PATH, so
  `gpu-advisor` is the checkout's. stdout and stderr are compared together.
- `localhost:8080` (the address the docs tell a reader to serve on) is rewritten to the port of the
  `gpu-advisor serve` the test started on 127.0.0.1.
- `...` in the expected output matches anything, across lines (doctest's ELLIPSIS): the marker for
  volatile fields (dates, timings) and for output shortened on purpose. Trailing spaces are ignored.
- A command that exits non-zero fails the block unless the block shows its status (`; echo "exit $?"`).
- Only `gpu-advisor` and `curl` commands run; a block with anything else (kubectl, helm) must be marked
  `<!-- skip: next -->` above it, or it fails, so nothing that needs a cluster passes unnoticed.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from sybil import Example

RUNNABLE = ("gpu-advisor", "curl", "printf")
SERVED_AT = "localhost:8080"
_CHECKER = doctest.OutputChecker()


@dataclass(frozen=True, slots=True)
class Step:
    command: str
    expected: str
    line: int


def steps(block: str, first_line: int) -> list[Step]:
    """The block's commands with the output expected of each; `first_line` numbers the block's first line."""
    found: list[Step] = []
    command: list[str] = []
    output: list[str] = []
    start = first_line
    lines = block.splitlines()
    i = 0
    while i < len(lines):
        text = lines[i]
        if text.startswith("$ "):
            if command:
                found.append(Step(" ".join(command), "\n".join(output), start))
            start, command, output = first_line + i, [text[2:]], []
            while command[-1].endswith("\\") and i + 1 < len(lines):
                command[-1] = command[-1][:-1].rstrip()
                i += 1
                command.append(lines[i].strip())
        elif command:
            output.append(text)
        i += 1
    if command:
        found.append(Step(" ".join(command), "\n".join(output), start))
    return found


def _program(command: str) -> str:
    return command.strip().split()[0] if command.strip() else ""


def _normal(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines()) + "\n"


def matches(expected: str, got: str) -> bool:
    """doctest's comparison with ELLIPSIS, trailing spaces and blank edges ignored."""
    return _CHECKER.check_output(_normal(expected), _normal(got), doctest.ELLIPSIS)


def run_step(step: Step, cwd: Path, port: int | None) -> str | None:
    """None when the command printed what the docs say; else a message naming the difference."""
    command = step.command
    if SERVED_AT in command:
        if port is None:
            return f"line {step.line}: needs the test server, which this document was not given"
        command = command.replace(SERVED_AT, f"127.0.0.1:{port}")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("GPU_ADVISOR_TRACES", None)
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0 and "$?" not in command:
        return f"line {step.line}: `{step.command}` exited {done.returncode}:\n{done.stdout}"
    if not matches(step.expected, done.stdout):
        return f"line {step.line}: `{step.command}` printed\n{done.stdout}\nwhere the docs say\n{step.expected}"
    return None


def evaluate_console(example: Example) -> str | None:
    """The Sybil evaluator: runs every step of the block in the document's scratch folder."""
    block = str(example.parsed)
    first = example.line + 1  # the fence is the region's first line
    for step in steps(block, first):
        program = _program(step.command)
        if not re.fullmatch(r"[\w.-]+", program) or program not in RUNNABLE:
            return (
                f"line {step.line}: `{program}` is not run by the docs tests; mark the block "
                "`<!-- skip: next -->` if it needs a cluster"
            )
        failure = run_step(step, example.namespace["cwd"], example.namespace.get("port"))
        if failure:
            return failure
    return None
