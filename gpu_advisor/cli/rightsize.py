"""``gpu-advisor rightsize``: which workloads hold more GPU than they use, and what to ask for instead.

History comes from ``--prometheus`` (DCGM exporter series); ``--cluster simulated`` without it uses the
simulated cluster's synthetic history. ``--annotate`` writes each owner's advice to its
``gpu-advisor.io/rightsize`` annotation (needs patch on the workload kinds, nothing else).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING

from gpu_advisor.cli.exits import EXIT_NO_ANSWER, CliError

if TYPE_CHECKING:  # the sources are imported when the command runs: `gpu-advisor agent` loads none of them
    from extender.advice.rightsize import GpuSeries, RightsizeReport
    from extender.sources.snapshot import Snapshot

__all__ = ["register"]


def _window(text: str) -> float:
    from extender.sources.gpu_history import parse_window

    try:
        return parse_window(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _history(args: argparse.Namespace, snap: Snapshot, end: float) -> tuple[list[GpuSeries], str]:
    if args.prometheus:
        from extender.model.series_map import directory
        from extender.sources.gpu_history import GpuHistory

        names = [str((n.get("metadata") or {}).get("name")) for n in snap.nodes]
        history = GpuHistory(args.prometheus)
        try:
            return history.series(end, args.window, directory(names, snap.pods)), f"prometheus {history.url}"
        except (OSError, RuntimeError, ValueError) as exc:
            raise CliError(f"no history from {args.prometheus}: {exc}", EXIT_NO_ANSWER) from None
    if args.cluster == "simulated":
        from extender.sources.simulated_history import simulated_history

        return simulated_history(snap, end), "synthetic history of the simulated cluster"
    raise CliError("give --prometheus URL (a Prometheus with DCGM exporter series), or use --cluster simulated")


def _rightsize(args: argparse.Namespace) -> int:
    from extender.advice.rightsize import pod_facts, rightsize, table
    from extender.sources.cluster_choice import KUBE, one_look
    from extender.sources.prometheus import prometheus_url

    if args.annotate and args.cluster != KUBE:
        raise CliError("--annotate writes to the live cluster: use it with --cluster kube")
    if args.prometheus:
        prometheus_url(args.prometheus)  # a malformed URL is bad input before the cluster is asked
    snap = one_look(args.cluster, args.kubeconfig)
    end = time.time() if args.prometheus else snap.at
    series, source = _history(args, snap, end)
    facts = pod_facts(snap.pods)
    report = rightsize(
        series, facts.owner_of, args.window / 3600, source, facts.latency_sensitive, args.namespace, args.min_gpus
    )
    print(json.dumps(report.to_dict(), indent=2) if args.json else table(report))
    if args.annotate:
        _annotate(args, report)
    return 0


def _annotate(args: argparse.Namespace, report: RightsizeReport) -> None:
    from extender.sources.kube import kube_api
    from extender.sources.rightsize_annotation import annotate_owners

    failed = annotate_owners(kube_api(args.kubeconfig), report.advice)
    for owner, reason in failed:
        print(f"gpu-advisor: warning: could not annotate {owner}: {reason}", file=sys.stderr)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmd = commands.add_parser(
        "rightsize", help="which workloads hold more GPU than they use, and what to ask for instead"
    )
    cmd.add_argument(
        "--cluster",
        default="kube",
        metavar="kube|simulated|FILE",
        help="where the pods are (owners): the live cluster (default kube), the built-in simulated cluster, "
        "or a snapshot file",
    )
    cmd.add_argument("--kubeconfig", help="kubeconfig file for --cluster kube")
    cmd.add_argument("--prometheus", metavar="URL", help="Prometheus with DCGM exporter series (the history)")
    cmd.add_argument("-n", "--namespace", help="only this namespace's workloads")
    cmd.add_argument("--window", type=_window, default="7d", metavar="7d", help="how far back (default 7d)")
    cmd.add_argument(
        "--min-gpus", type=float, default=0.0, metavar="N", help="only workloads holding ≥ N GPUs (default 0)"
    )
    cmd.add_argument("--json", action="store_true", help="print the report as JSON")
    cmd.add_argument(
        "--annotate", action="store_true", help="write gpu-advisor.io/rightsize on each owner (off by default)"
    )
    cmd.set_defaults(handler=_rightsize)
