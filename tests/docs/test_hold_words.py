"""The docs quote a hold as the extender words it: the quote is checked against the code's own words."""

from __future__ import annotations

import re
from pathlib import Path

from extender.scoring.reserve import HELD_FOR, hold_reason

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_quoted_hold_is_the_code_s_words() -> None:
    quoted: dict[str, str] = {}
    for page in sorted(DOCS.rglob("*.md")):
        for found in re.findall(rf"`({HELD_FOR}: [^`]*)`", page.read_text(encoding="utf-8")):
            quoted[found] = page.name
    assert "extender.md" in quoted.values()  # the extender's page quotes one
    for text, name in quoted.items():
        milli = re.search(r"this (\d+)-milli share", text)
        assert milli is not None, (name, text)
        assert text == hold_reason(int(milli.group(1))), name
