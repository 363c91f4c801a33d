"""The command line's side of the error tree: one line on stderr and the exit code that goes with it.

Exit codes: 0 done; 2 bad input or usage (one line on stderr, never a traceback); 3 a valid question
with no answer (e.g. no GPU set of that size is free); 4 an action stopped part-way (``defrag --apply``: the API
server refused a move).
"""

from __future__ import annotations

import sys

from extender.errors import GpuAdvisorError, UsageError

__all__ = ["EXIT_BAD_INPUT", "EXIT_NO_ANSWER", "EXIT_STOPPED", "CliError", "report"]

EXIT_BAD_INPUT = 2
EXIT_NO_ANSWER = 3
EXIT_STOPPED = 4


class CliError(UsageError):
    """A message for the user and the exit code that goes with it."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.exit_code = code


def report(exc: GpuAdvisorError) -> int:
    """The one mapping from gpu-advisor's errors to the command line: say it, and exit with its code."""
    # One line, whatever the cause wrote (a YAML parser's message spans three): logs and scripts read lines.
    message = " ".join(part.strip() for part in str(exc).splitlines() if part.strip())
    print(f"gpu-advisor: error: {message}", file=sys.stderr)
    return exc.exit_code
