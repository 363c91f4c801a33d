"""The FGD paper's published results beside a replay's, for the 17 published traces.

Published curves come from `fgd-expected/analysis_allo_discrete.csv` (policies labelled `01-Random`
.. `06-FGD`); unallocated GPU % at X = 100 is summarised over the same seeds as the replay when the
paper ran them all, else over every published seed (the table says which).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from extender.advice.replay import openb
from extender.advice.replay.baselines import PUBLISHED_LABELS
from extender.advice.replay.metrics import Summary, unallocated_at
from extender.advice.replay.openb import PublishedRun
from extender.advice.replay.report_table import format_cell
from extender.advice.replay.sweep import Sweep

__all__ = ["ALLOC_CSV", "compare_published", "load_published_alloc", "published_traces"]

ALLOC_CSV = Path("fgd-expected") / "analysis_allo_discrete.csv"


def load_published_alloc(traces: Path) -> list[PublishedRun]:
    """Every published allocation curve (1,020 runs)."""
    return openb.load_published(traces / ALLOC_CSV)


def published_traces(runs: Sequence[PublishedRun]) -> set[str]:
    """Names of the published traces (`default`, `multigpu50`, ...)."""
    return {run.trace for run in runs}


def _published_at_100(
    runs: Sequence[PublishedRun], trace: str, policy: str, seeds: Sequence[int]
) -> tuple[Summary, int] | None:
    label = PUBLISHED_LABELS[policy]
    by_seed = {run.seed: run.values for run in runs if run.trace == trace and run.policy == label}
    if not by_seed:
        return None
    chosen = list(seeds) if all(seed in by_seed for seed in seeds) else sorted(by_seed)
    curves = [by_seed[seed] for seed in chosen]
    return unallocated_at(curves, 100), len(chosen)


def compare_published(sweep: Sweep, runs: Sequence[PublishedRun]) -> str:
    """A table: per baseline policy, unallocated GPU % at 100 % arrived, replayed and published."""
    lines = [
        f"{sweep.trace}: unallocated GPU % at 100 % arrived, replayed vs published (FGD paper, ATC'23)",
        f"{'policy':<14}{'replayed':>16}{'published':>16}{'difference':>12}  published seeds",
    ]
    for policy in sweep.policies:
        mine = [run.alloc for run in sweep.curves(policy)]
        replayed = unallocated_at(mine, 100) if any(c[100] is not None for c in mine) else None
        theirs = _published_at_100(runs, sweep.trace, policy, sweep.seeds) if policy in PUBLISHED_LABELS else None
        if theirs is None:
            lines.append(f"{policy:<14}{format_cell(replayed):>16}{'—':>16}{'—':>12}  not published")
            continue
        published, count = theirs
        difference = "—" if replayed is None else f"{replayed.mean - published.mean:+.2f}"
        lines.append(f"{policy:<14}{format_cell(replayed):>16}{format_cell(published):>16}{difference:>12}  {count}")
    return "\n".join(lines)
