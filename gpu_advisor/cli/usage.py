"""``gpu-advisor usage``: who held which GPUs over a window (whole, MIG slices, time-sliced and MPS
shares), and how much of that they used; per namespace, label or workload.

History comes from ``--prometheus`` (kube-state-metrics and DCGM exporter series); ``--cluster
simulated`` without it uses the simulated cluster's synthetic history. Nothing leaves the cluster.
"""

from __future__ import annotations

import argparse
import json
import time

from gpu_advisor.cli.exits import EXIT_NO_ANSWER, CliError

__all__ = ["register"]


def _window(text: str) -> float:
    from extender.sources.gpu_history import parse_window

    try:
        return parse_window(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _by(text: str) -> str:
    from extender.advice.usage import tenant_key

    try:
        tenant_key(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _usage(args: argparse.Namespace) -> int:
    from extender.advice.usage import usage_csv, usage_report, usage_table

    if args.prometheus:
        from extender.sources.usage_history import UsageHistory

        history = UsageHistory(args.prometheus)
        try:
            # Only --json shows VRAM peaks: the table and CSV spare Prometheus that pass over the samples.
            pods = history.pods(time.time(), args.window, vram=args.json)
            source = f"prometheus {history.url}"
        except (OSError, RuntimeError, ValueError) as exc:
            raise CliError(f"no history from {args.prometheus}: {exc}", EXIT_NO_ANSWER) from None
    elif args.cluster == "simulated":
        from extender.sources.simulated_usage import simulated_usage
        from extender.sources.snapshot import simulated_cluster

        snap = simulated_cluster()
        pods, source = simulated_usage(snap, snap.at, args.window), "synthetic history of the simulated cluster"
    else:
        raise CliError("give --prometheus URL (kube-state-metrics and DCGM exporter series), or --cluster simulated")
    report = usage_report(pods, args.by, args.window / 3600, source)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(usage_csv(report) if args.csv else usage_table(report), end="" if args.csv else "\n")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmd = commands.add_parser("usage", help="per-tenant GPU-hours allocated and used (whole GPUs, MIG, shares)")
    cmd.add_argument("--prometheus", metavar="URL", help="Prometheus with kube-state-metrics and DCGM series")
    cmd.add_argument(
        "--cluster",
        default="kube",
        metavar="kube|simulated",
        help="simulated: its synthetic history; default kube (give --prometheus)",
    )
    cmd.add_argument(
        "--by",
        type=_by,
        default="namespace",
        metavar="namespace|label:KEY|workload",
        help="the tenant (default namespace)",
    )
    cmd.add_argument("--window", type=_window, default="30d", metavar="30d", help="how far back (default 30d)")
    out = cmd.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the report as JSON")
    out.add_argument("--csv", action="store_true", help="print one CSV row per tenant")
    cmd.set_defaults(handler=_usage)
