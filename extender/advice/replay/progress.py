"""Progress of a sweep as runs finish: a one-line bar redrawn in place on a terminal, or a line per
finished run for a log (a Ray job's, say).

The stream is passed in; the command line hands the bar stderr only when stderr is a terminal, so
redirected output and logs never see carriage returns.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from extender.advice.replay.sweep import RunCurves

__all__ = ["ProgressBar", "ProgressLog", "progress_line"]

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
        self.step(f"{run.policy} seed {run.seed}")

    def step(self, label: str) -> None:
        """One more run finished, named by `label`."""
        self._done += 1
        self._draw(label)

    def close(self) -> None:
        """End the line, so what follows starts on its own."""
        self._stream.write("\n")
        self._stream.flush()


class ProgressLog:
    """A line per finished run, `  3/80 runs  0m42s  default FGD seed 44`, for streams that are logs."""

    def __init__(self, total: int, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self._total = total
        self._stream = stream
        self._clock = clock
        self._started = clock()
        self._done = 0

    def step(self, label: str) -> None:
        """One more run finished, named by `label`."""
        self._done += 1
        elapsed = _clock(self._clock() - self._started)
        self._stream.write(f"{self._done:>{len(str(self._total))}}/{self._total} runs  {elapsed}  {label}\n")
        self._stream.flush()

    def close(self) -> None:
        """Nothing to end: every line is whole."""
