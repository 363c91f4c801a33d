"""What `gpu-advisor replay` writes once its runs are in: the tables on stdout, then --json and --plot.

One trace keeps the contract's document as it is; several give `{"traces": [document, ...]}` in the
order asked for, and one PNG per trace beside the --plot name (`curves.png` → `curves-default.png`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["plot_path", "report", "traces_document"]


def plot_path(path: Path, trace: str, several: bool) -> Path:
    """The --plot file of one trace: the name given, or with `-<trace>` before its suffix when several."""
    return path.with_name(f"{path.stem}-{trace}{path.suffix}") if several else path


def report(
    args: argparse.Namespace, traces: Sequence[Any], profile: Any, limit: Any, published: Any, outage: Any = None
) -> None:
    """Every trace's tables on stdout (a blank line between traces), then the --json and --plot files."""
    from extender.advice.replay.defrag_report import format_defrag
    from extender.advice.replay.published import compare_published
    from extender.advice.replay.report_table import format_sweep

    for index, runs in enumerate(traces):
        if index:
            print()
        print(format_sweep(runs.sweep))
        moved = format_defrag(runs.sweep)
        if moved is not None:
            print()
            print(moved)
        if profile is not None:
            from extender.advice.replay.kube_run import format_kube_counts

            print()
            print(format_kube_counts(profile, runs.kube, outage))
        if limit is not None:
            from extender.advice.replay.limit import format_distances

            print()
            print(format_distances(runs.sweep, limit))
        if published is not None:
            print()
            print(compare_published(runs.sweep, published))
    if args.json is not None:
        args.json.write_text(json.dumps(traces_document(traces, profile, limit, outage), indent=1) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    if args.plot is not None:
        from extender.advice.replay.plot import write_plot

        for runs in traces:
            path = plot_path(args.plot, runs.sweep.trace, len(traces) > 1)
            write_plot(runs.sweep, path)
            print(f"wrote {path}", file=sys.stderr)


def traces_document(traces: Sequence[Any], profile: Any, limit: Any, outage: Any = None) -> dict[str, Any]:
    """The --json document: one trace's, or `{"traces": [...]}` for several."""
    documents = [_document(runs.sweep, profile, runs.kube, limit, outage) for runs in traces]
    return documents[0] if len(documents) == 1 else {"traces": documents}


def _document(sweep: Any, profile: Any, kube: dict[int, Any], limit: Any, outage: Any = None) -> dict[str, Any]:
    """One trace's document: the sweep, with the distance to a limit and kube-scheduler's counts if asked."""
    from extender.advice.replay.report_json import sweep_json

    document = sweep_json(sweep)
    if limit is not None:
        from extender.advice.replay.limit import limit_json

        added = limit_json(sweep, limit)
        document["limit"] = added["limit"]
        for policy, distance in added["distance_to_limit"].items():
            document["policies"][policy]["distance_to_limit"] = distance
    if profile is not None:
        from extender.advice.replay.kube_run import kube_counts_json

        document["kube_scheduler"] = kube_counts_json(profile, kube, outage)
    return document
