"""The performance page's over-the-wire tables, drawn from the files benchmarks/wire.py writes.

The docs include these tables instead of copied figures, so the page always shows the last run that was
committed (`benchmarks/results/wire.csv`, a table per fleet, and `wire-fleets.csv`, each fleet's start-up
and memory) and cannot quote two different runs. A wire.csv from before fleets (no `fleet` column) is
the synthetic fleet.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

WIRE_CSV = Path(__file__).resolve().parent / "results" / "wire.csv"
FLEETS_CSV = WIRE_CSV.with_name("wire-fleets.csv")


@dataclass(frozen=True, slots=True)
class WireRow:
    """One (names, verb, connections) turn of wire.py; `ratio` is no-op req/s ÷ advisor req/s."""

    fleet: str
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
                        fleet=row.get("fleet") or "synthetic",
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
    """A Markdown table per fleet (in the order run): one line per (names, verb, connections), quiet and
    refreshing side by side."""
    fleets = list(dict.fromkeys(r.fleet for r in rows))
    parts = [
        _fleet_table([r for r in rows if r.fleet == fleet], fleet if len(fleets) > 1 else None) for fleet in fleets
    ]
    loads = [r.load1 for r in rows]
    parts.append(f"Load average during the run: {min(loads):.1f}–{max(loads):.1f}.\n")
    return "\n".join(parts)


def _fleet_table(rows: list[WireRow], fleet: str | None) -> str:
    refreshing = {(r.names, r.verb, r.connections): r for r in rows if r.refreshing}
    quiet = sorted((r for r in rows if not r.refreshing), key=lambda r: (r.names, r.verb, r.connections))
    lines = [f"**{fleet} fleet**", ""] if fleet else []
    lines += [
        "| names | verb | conn. | advisor req/s | no-op req/s | ratio | ratio while refreshing |",
        "|---:|---|---:|---:|---:|---|---|",
    ]
    for row in quiet:
        busy = refreshing.get((row.names, row.verb, row.connections))
        lines.append(
            f"| {row.names:,} | {row.verb} | {row.connections} | {row.advisor_rps:,.0f} | {row.noop_rps:,.0f} "
            f"| {_ratio(row)} | {_ratio(busy) if busy else 'not run'} |"
        )
    return "\n".join(lines) + "\n"


def fleets_markdown(path: Path = FLEETS_CSV) -> str:
    """Each fleet's start-up and resident memory (wire-fleets.csv); a note when the run predates it."""
    if not path.is_file():
        return "(start-up and memory per fleet: not in this run's files)\n"
    lines = [
        "| fleet | nodes | start-up to ready | RSS ready | RSS after the refreshing runs |",
        "|---|---:|---:|---:|---:|",
    ]
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        for row in reader:
            try:
                lines.append(
                    f"| {row['fleet']} | {int(row['nodes']):,} | {float(row['startup_s']):.1f} s "
                    f"| {float(row['rss_ready_mib']):.0f} MiB | {float(row['rss_after_refresh_runs_mib']):.0f} MiB |"
                )
            except (KeyError, ValueError) as exc:
                raise ValueError(f"{path}:{reader.line_num}: {exc!r}") from None
    return "\n".join(lines) + "\n"
