"""The performance page's over-the-wire table, drawn from the file benchmarks/wire.py writes.

The docs include this table instead of copied figures, so the page always shows the last run that was
committed (`benchmarks/results/wire.csv`) and cannot quote two different runs.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

WIRE_CSV = Path(__file__).resolve().parent / "results" / "wire.csv"


@dataclass(frozen=True, slots=True)
class WireRow:
    """One (names, verb, connections) turn of wire.py; `ratio` is no-op req/s ÷ advisor req/s."""

    refreshing: bool
    names: int
    verb: str
    connections: int
    advisor_rps: float
    noop_rps: float
    ratio: float
    ratio_min: float
    ratio_max: float
    load1: float


def read_wire_csv(path: Path = WIRE_CSV) -> list[WireRow]:
    """The rows of wire.csv; a missing column or a bad number raises ValueError naming the line."""
    rows = []
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        for row in reader:
            try:
                rows.append(
                    WireRow(
                        refreshing=row["refresh"] == "True",
                        names=int(row["names"]),
                        verb=row["verb"],
                        connections=int(row["connections"]),
                        advisor_rps=float(row["advisor_rps"]),
                        noop_rps=float(row["noop_rps"]),
                        ratio=float(row["ratio"]),
                        ratio_min=float(row["ratio_min"]),
                        ratio_max=float(row["ratio_max"]),
                        load1=float(row["load1"]),
                    )
                )
            except (KeyError, ValueError) as exc:
                raise ValueError(f"{path}:{reader.line_num}: {exc!r}") from None
    return rows


def _ratio(row: WireRow) -> str:
    return f"{row.ratio:.2f}× ({row.ratio_min:.2f}–{row.ratio_max:.2f})"


def wire_markdown(rows: list[WireRow]) -> str:
    """A Markdown table: one line per (names, verb, connections), quiet and refreshing side by side."""
    refreshing = {(r.names, r.verb, r.connections): r for r in rows if r.refreshing}
    quiet = sorted((r for r in rows if not r.refreshing), key=lambda r: (r.names, r.verb, r.connections))
    lines = [
        "| names | verb | conn. | advisor req/s | no-op req/s | ratio | ratio while refreshing |",
        "|---:|---|---:|---:|---:|---|---|",
    ]
    for row in quiet:
        busy = refreshing.get((row.names, row.verb, row.connections))
        lines.append(
            f"| {row.names:,} | {row.verb} | {row.connections} | {row.advisor_rps:,.0f} | {row.noop_rps:,.0f} "
            f"| {_ratio(row)} | {_ratio(busy) if busy else 'not run'} |"
        )
    loads = [r.load1 for r in rows]
    lines.append("")
    lines.append(f"Load average during the run: {min(loads):.1f}–{max(loads):.1f}.")
    return "\n".join(lines) + "\n"
