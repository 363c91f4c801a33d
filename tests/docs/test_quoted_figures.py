"""A figure quoted in more than one place says the same everywhere.

Each entry of ``QUOTED`` is one measured figure and every place that quotes it: a page and a pattern
whose one group is the figure as written there. A page rewritten without the sentence fails here too
(the pattern finds nothing), so a figure moves with its quotes or its entry is updated, never left
behind in one of them. To quote a figure somewhere new, add the place to its entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

Place = tuple[str, str]  # (page, pattern with one group)

QUOTED: dict[str, list[Place]] = {
    "the advisor's unallocated GPU % on the openb default trace at 100 % (seeds 42-51)": [
        (
            "docs/placement-quality.md",
            r"\| \*\*advisor\*\* \(learned online, replayed; the default policy\) \| \*\*([\d.]+) ±",
        ),
        ("docs/placement-quality.md", r"\| default, \*\*advisor\*\* (?:\| [\d.]+ ){10}\| ([\d.]+) \|"),
        ("docs/deploy/placement-quality.md", r"\(seeds 42–51\) it strands ([\d.]+) %"),
    ],
    "FGD's unallocated GPU % on the openb default trace at 100 %, as published": [
        ("docs/placement-quality.md", r"\| FGD \| ([\d.]+) ±"),
        ("docs/deploy/placement-quality.md", r"it strands [\d.]+ % at 100 % arrived \(FGD ([\d.]+) %\)"),
    ],
    "FGD's seconds for one default-trace replay (benchmarks/replay.py)": [
        ("docs/placement-quality.md", r"and FGD's ([\d.–]+) s \(`benchmarks/replay.py`"),
        ("docs/placement-quality.md", r"BestFit about 1 s, FGD ([\d.–]+) s,"),
    ],
    "the advisor's seconds for one default-trace replay (benchmarks/replay.py)": [
        ("docs/placement-quality.md", r"The advisor's run takes ([\d.]+) s and FGD's"),
        ("docs/placement-quality.md", r"the advisor's\s+own policy ([\d.]+) s \(goal"),
    ],
    "median server time of a filter call for a pod that wants no GPU, 1,000 nodes (dra_passthrough.py)": [
        ("docs/nvl72-dra.md", r"\| a pod with no resources \(median / p99\) \| [^|]+ \| ([\d.]+) / "),
        ("docs/deploy/placement-quality.md", r"measures ([\d.]+) ms median server time per filter call at 1,000"),
    ],
}


def read(page: str) -> str:
    return (REPO / page).read_text(encoding="utf-8")


def problems(figure: str, text_of: Callable[[str], str] = read) -> list[str]:
    """What is wrong with a figure's quotes: a place that does not quote it once, or places that differ."""
    found = {f"{page}: {pattern}": re.findall(pattern, text_of(page)) for page, pattern in QUOTED[figure]}
    out = [f"not quoted once at {where}: {values}" for where, values in found.items() if len(values) != 1]
    said = {where: values[0] for where, values in found.items() if len(values) == 1}
    if len(set(said.values())) > 1:
        out.append(f"different figures: {said}")
    return out


@pytest.mark.parametrize("figure", list(QUOTED))
def test_a_figure_quoted_in_several_places_says_the_same_in_each(figure: str) -> None:
    assert len(QUOTED[figure]) >= 2, "an entry is for a figure quoted more than once"
    assert problems(figure) == []


def test_a_place_left_with_an_old_figure_or_rewritten_without_it_is_caught() -> None:
    figure = "median server time of a filter call for a pod that wants no GPU, 1,000 nodes (dra_passthrough.py)"
    page = "docs/deploy/placement-quality.md"

    def stale(name: str) -> str:
        return re.sub(r"measures [\d.]+ ms", "measures 9.99 ms", read(name)) if name == page else read(name)

    def rewritten(name: str) -> str:
        return read(name).replace("median server time per filter call", "per call") if name == page else read(name)

    assert problems(figure, stale)[0].startswith("different figures:")
    assert problems(figure, rewritten)[0].startswith(f"not quoted once at {page}")
