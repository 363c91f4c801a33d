"""A one-line progress bar for a sweep, redrawn in place on a terminal as runs finish.

The stream is passed in; the command line hands it stderr only when stderr is a terminal, so
redirected output and logs never see carriage returns.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from extender.advice.replay.sweep import RunCurves

__all__ = ["ProgressBar", "progress_line"]

_WIDTH = 24


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def progress_line(done: int, total: int, elapsed: float, last: str = "") -> str:
    """`[#########---------------]  3/8 runs  0m42s, about 1m10s left  (FGD seed 44)`."""
    filled = _WIDTH * done // total if total else _WIDTH
    line = f"[{'#' * filled}{'-' * (_WIDTH - filled)}] {done:>{len(str(total))}}/{total} runs  {_clock(elapsed)}"
    if 0 < done < total:
        line += f", about {_clock(elapsed / done * (total - done))} left"
    return line + (f"  ({last})" if last else "")


class ProgressBar:
    """Counts finished runs of a sweep and redraws the bar after each one."""

    def __init__(self, total: int, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self._total = total
        self._stream = stream
        self._clock = clock
        self._started = clock()
        self._done = 0
        self._width = 0
        self._draw("")

    def _draw(self, last: str) -> None:
        line = progress_line(self._done, self._total, self._clock() - self._started, last)
        self._stream.write("\r" + line.ljust(self._width))
        self._stream.flush()
        self._width = max(self._width, len(line))

    def update(self, run: RunCurves) -> None:
        """One more run finished."""
        self._done += 1
        self._draw(f"{run.policy} seed {run.seed}")

    def close(self) -> None:
        """End the line, so what follows starts on its own."""
        self._stream.write("\n")
        self._stream.flush()
