"""Numbers from Kubernetes objects, read exactly: resource quantities and the digits of a size.

Everything here is exact decimal arithmetic on text of bounded length. ``float()`` would turn a
string of 400 nines into ``inf`` and ``"NaN"`` into a value that every comparison answers False,
and both have reached the model that way; a quantity is either a finite, whole, non-negative count
or a :class:`QuantityError` that says why not.
"""

from __future__ import annotations

import decimal
import re
from typing import Any

__all__ = ["MAX_COUNT", "QuantityError", "count_quantity", "decimal_number"]

# The API server keeps a quantity's value as a signed 64-bit integer.
MAX_COUNT = 2**63 - 1
# The longest quantity the API server writes back is far shorter; this bounds the work on a hostile one.
_MAX_TEXT = 64
# Kubernetes' quantity grammar: <sign><digits>[.<digits>]<suffix>, suffix binary, decimal or exponent.
_QUANTITY = re.compile(r"([+-]?)(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?\d{1,4})?")
_SUFFIX = {
    "": decimal.Decimal(1),
    "m": decimal.Decimal("0.001"),
    **{s: decimal.Decimal(1000) ** (n + 1) for n, s in enumerate("kMGTPE")},
    **{s + "i": decimal.Decimal(1024) ** (n + 1) for n, s in enumerate("KMGTPE")},
}
# Enough digits that no multiplication below rounds a value that fits MAX_COUNT.
_EXACT = decimal.Context(prec=200, Emax=10_000, Emin=-10_000)


class QuantityError(ValueError):
    """A quantity that is not a whole number of devices; the message says why, for a person."""


def decimal_number(digits: str) -> decimal.Decimal:
    """Plain decimal digits (``123``, ``1.5``) → an exact Decimal."""
    return decimal.Decimal(digits, context=_EXACT)


def count_quantity(value: Any) -> int:
    """``8``, ``"8"``, ``"1k"``, ``"2e3"`` → a whole count ≥ 0; :class:`QuantityError` otherwise.

    Extended resources such as ``nvidia.com/gpu`` are whole numbers: the API server refuses ``0.5``,
    so this does too, and ``NaN``, ``inf``, ``1e400`` and negative counts are not counts at all.
    """
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a count")
    if isinstance(value, int):
        number = decimal.Decimal(value)
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(f"{value!r} is not a finite count")
        number = decimal.Decimal(value)
    else:
        text = str(value)
        m = _QUANTITY.fullmatch(text) if len(text) <= _MAX_TEXT else None
        if m is None:
            shown = repr(text) if len(text) <= _MAX_TEXT else repr(text[:_MAX_TEXT]) + "…"
            raise QuantityError(f"{shown} is not a number (a quantity such as 1, 8 or 2k)")
        sign, digits, suffix = m.groups()
        number = _EXACT.multiply(decimal.Decimal(sign + digits), _scale(suffix or ""))
    if number < 0:
        raise QuantityError(f"{value!r} is negative: a count is 0 or more")
    if number != number.to_integral_value():
        raise QuantityError(f"{value!r} is not a whole number")
    if number > MAX_COUNT:
        raise QuantityError(f"{value!r} is larger than any count the API server keeps")
    return int(number)


def _scale(suffix: str) -> decimal.Decimal:
    if suffix[:1] in ("e", "E"):
        return _EXACT.scaleb(decimal.Decimal(1), int(suffix[1:]))
    return _SUFFIX[suffix]
