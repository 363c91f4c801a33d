"""An empty query parameter is a parameter not given: ``?namespace=&window=7d`` is ``?window=7d``."""

from __future__ import annotations

import pytest

from extender.http.query import without_blank_values


@pytest.mark.parametrize(
    ("query", "kept"),
    [
        (b"namespace=&window=7d&min_gpus=", b"window=7d"),  # two empty values dropped
        (b"by=&window=30d", b"window=30d"),
        (b"by=label%3Ateam", b"by=label%3Ateam"),  # a value, even an escaped one, stays
        (b"a==", b"a=="),  # the value is "=": given
        (b"flag", b"flag"),  # no "=": a bare flag someone meant
        (b"a=&&b=1", b"b=1"),  # an empty pair between two "&" is nothing
        (b"a=", b""),
    ],
)
def test_pairs_with_an_empty_value_are_left_out(query: bytes, kept: bytes) -> None:
    assert without_blank_values(query) == kept
