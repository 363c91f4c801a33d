"""Log hygiene for a server that hostile clients talk to: control characters in what they send (pod
names, paths) are escaped, so a log line cannot be forged or a terminal driven; and a cause that
repeats (one per failed accept() at the file-descriptor limit) is logged a few times per minute,
then counted, not written 20,000 times a second.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable

__all__ = ["LogHygiene", "escape_controls", "install_log_hygiene"]

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROLS_AND_NEWLINES = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escape_controls(text: str, keep_newlines: bool = False) -> str:
    """``\\x1b`` for ESC, ``\\n`` for a newline (unless kept): the text stays one readable line."""
    pattern = _CONTROLS if keep_newlines else _CONTROLS_AND_NEWLINES
    if not pattern.search(text):
        return text
    return pattern.sub(_escaped, text)


# A cause is a message's opening with its numbers blanked: asyncio writes the full text (with fds,
# addresses and timer deadlines) into the message, so templates alone would not group it.
_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    # No codec lookup here: at the file-descriptor limit even importing a codec module fails.
    char = match.group()
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


class LogHygiene(logging.Filter):
    def __init__(self, per_window: int = 5, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.per_window, self.window_s, self.clock = per_window, window_s, clock
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}  # cause → (window start, count)

    def filter(self, record: logging.LogRecord) -> bool:
        decided: bool | None = getattr(record, "_gpu_advisor_hygiene", None)
        if decided is None:  # a record that reaches two handlers is judged once
            decided = self._decide(record)
            record._gpu_advisor_hygiene = decided
        return decided

    def _decide(self, record: logging.LogRecord) -> bool:
        cause = (record.name, _NUMBERS.sub("#", str(record.msg)[:60]))
        now = self.clock()
        start, count = self._seen.get(cause, (now, 0))
        if now - start >= self.window_s:
            suppressed = count - self.per_window
            start, count = now, 0
            if suppressed > 0:
                record.msg = f"{record.msg} [{suppressed} more like this in the last {self.window_s:g} s]"
        count += 1
        self._seen[cause] = (start, count)
        if len(self._seen) > 10_000:  # causes are message templates: few; bound it anyway
            self._seen.clear()
        if count > self.per_window:
            return False
        self._clean(record)
        return True

    @staticmethod
    def _clean(record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # arguments that do not fit the template: logging reports it
            return
        record.msg, record.args = escape_controls(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = escape_controls(logging.Formatter().formatException(record.exc_info), keep_newlines=True)


def install_log_hygiene(loggers: Iterable[str] = ("", "uvicorn", "uvicorn.error", "uvicorn.access")) -> LogHygiene:
    """One filter on every handler of these loggers (filters on handlers see propagated records too)."""
    hygiene = LogHygiene()
    for name in loggers:
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(f, LogHygiene) for f in handler.filters):
                handler.addFilter(hygiene)
    return hygiene
