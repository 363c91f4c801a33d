"""An outage of the advisor in the kube-scheduler replay: which pods of the arrival order arrive while it is away.

``START:LENGTH``: START pods arrive before the advisor goes, the next LENGTH arrive while it is gone,
and it is back before the pod after them. Either number may be a percentage of the run's pods
(``40%:140``: the advisor goes after 40 % of the pods, rounded half up, for 140 pods), so one window
fits arrival orders of different lengths. The window must lie inside the run's arrival order.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from extender.advice.replay.openb import ReplayInputError

__all__ = ["Outage", "parse_outage"]

_FORM = "START:LENGTH, in pods of the arrival order or percentages of them (e.g. 121:140 or 40%:140)"


@dataclass(frozen=True, slots=True)
class Outage:
    """A window of the arrival order; ``*_percent``: the number is a percentage of the run's pods."""

    text: str
    start: Decimal
    start_percent: bool
    length: Decimal
    length_percent: bool

    def window(self, pods: int) -> range:
        """The indexes (0-based) of the pods arriving while the advisor is away, for a run of ``pods``."""
        start = _count(self.start, self.start_percent, pods)
        length = max(1, _count(self.length, self.length_percent, pods))
        if start >= pods:
            raise ReplayInputError(f"--outage {self.text}: starts after pod {start}, but the run has {pods} pods")
        if start + length > pods:
            raise ReplayInputError(
                f"--outage {self.text}: pods {start + 1}–{start + length} are away, but the run has {pods} pods"
            )
        return range(start, start + length)


def _count(value: Decimal, percent: bool, pods: int) -> int:
    exact = value * pods / 100 if percent else value
    return int(exact.to_integral_value(ROUND_HALF_UP))


def _number(part: str, what: str, text: str, least: int) -> tuple[Decimal, bool]:
    percent = part.endswith("%")
    digits = part.removesuffix("%").strip()
    try:
        value = Decimal(digits) if digits and (percent or digits.isdigit()) else None
    except InvalidOperation:
        value = None
    if value is None or not value.is_finite():
        raise ReplayInputError(f"--outage {text}: {what} {part!r} is not a number of pods or a percentage; {_FORM}")
    if value < least or (percent and value > 100):
        bound = f"between {least} and 100 %" if percent else f"{least} or more"
        raise ReplayInputError(f"--outage {text}: {what} {part} is not {bound}")
    return value, percent


def parse_outage(text: str) -> Outage:
    """``START:LENGTH`` as ``--outage`` takes it (each a whole number of pods, or a percentage)."""
    start, colon, length = text.partition(":")
    if not colon:
        raise ReplayInputError(f"--outage {text}: expected {_FORM}")
    first, first_percent = _number(start.strip(), "START", text, 0)
    span, span_percent = _number(length.strip(), "LENGTH", text, 1 if not length.strip().endswith("%") else 0)
    if span == 0:
        raise ReplayInputError(f"--outage {text}: LENGTH 0% leaves no pod away")
    return Outage(text, first, first_percent, span, span_percent)
