"""`gpu-advisor replay`: what-if placement quality over a whole cluster and a stream of pods.

Replays the pods' arrivals (shipped orders, or drawn per seed) through each policy and prints
unallocated GPU % and frag/total % at 75-130 % arrived demand (mean ± sd over seeds); `--json`,
`--plot` and `--compare-published` add the contract's document, a PNG and the FGD paper's figures.
Bad input is one line on stderr and exit 2 (the error tree's `InputError`s, reported by `exits`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from extender.advice.replay.openb import ReplayInputError
from gpu_advisor.cli.exits import CliError

__all__ = ["DEFAULT_SEEDS", "parse_policies", "parse_seeds", "register"]

DEFAULT_SEEDS = "42-51"


def parse_seeds(text: str) -> list[int]:
    """`42,43` or `42-51` (or both mixed): distinct seeds, in the order given."""
    seeds: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise ReplayInputError(f"--seeds: {part!r} is not a seed (a whole number) or a range such as 42-51")
        span = range(int(low), int(high) + 1) if dash else [int(low)]
        if not span:
            raise ReplayInputError(f"--seeds: the range {part} is empty")
        seeds += [seed for seed in span if seed not in seeds]
    return seeds


def parse_policies(text: str) -> list[str]:
    """Comma-separated policy names, matched without regard to case, in the order given."""
    from extender.advice.replay.policies import policy_names

    known = {name.lower(): name for name in policy_names()}
    chosen: list[str] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if part.lower() not in known:
            raise ReplayInputError(f"--policy: no policy {part!r}; choose from {', '.join(known.values())}")
        if known[part.lower()] not in chosen:
            chosen.append(known[part.lower()])
    if not chosen:
        raise ReplayInputError("--policy: name at least one policy")
    return chosen


def _jobs(text: str | None, runs: int) -> int:
    if text is None:
        return max(1, min(os.cpu_count() or 1, runs))
    if not text.isdigit() or int(text) < 1:
        raise ReplayInputError(f"--jobs: {text!r} is not a number of processes (1 or more)")
    return int(text)


def _scoring(path: Path | None) -> Any:
    """The advisor's scoring policy file (as the extender's ``--policy`` reads it), or None."""
    if path is None:
        return None
    from extender.scoring.policy import PolicyError
    from extender.sources.policy_file import load_policy

    try:
        return load_policy(path)
    except PolicyError as exc:
        raise ReplayInputError(f"--scoring-policy: {exc}") from None


def _interval(text: str | None) -> float:
    """Seconds between arrivals (the clock a held pod's limit runs on)."""
    from extender.advice.replay.waiting import ARRIVAL_INTERVAL_S

    if text is None:
        return ARRIVAL_INTERVAL_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ReplayInputError(f"--arrival-interval: {text!r} is not a number of seconds above 0")
    return value


def _writable(path: Path | None, flag: str) -> None:
    """Refuse an output file that cannot be written before the sweep, not after it."""
    if path is not None and not path.parent.is_dir():
        raise ReplayInputError(f"{flag}: {path.parent} is not a folder")
    if path is not None and path.is_dir():
        raise ReplayInputError(f"{flag}: {path} is a folder; name a file")


def _published_runs(pods: Path) -> Any:
    """The published curves, from the trace folder beside the pod file, else the configured one."""
    from extender.advice.replay import openb
    from extender.advice.replay.published import ALLOC_CSV, load_published_alloc

    for folder in (pods.resolve().parent.parent, openb.traces_dir()):
        if (folder / ALLOC_CSV).is_file():
            return load_published_alloc(folder)
    raise ReplayInputError(
        f"--compare-published: no {ALLOC_CSV} beside {pods} or in ${openb.TRACES_ENV} (the folder holding openb/)"
    )


def _run(args: argparse.Namespace) -> int:
    from extender.advice.replay.policies import policy_names
    from extender.advice.replay.published import published_traces
    from gpu_advisor.replay_inputs import load_scheduler_profile, load_workset, trace_name

    profile = load_scheduler_profile(args.scheduler_config) if args.scheduler_config is not None else None
    outage = _outage(args.outage, profile)
    if profile is not None and args.policy is None:
        policies: list[str] = []  # only kube-scheduler's runs, unless policies are named beside it
    else:
        policies = parse_policies(args.policy if args.policy is not None else ",".join(policy_names()))
    seeds = parse_seeds(args.seeds)
    runs = (len(policies) + (profile is not None) + (outage is not None)) * len(seeds)
    jobs = _jobs(args.jobs, runs)
    _writable(args.json, "--json")
    _writable(args.plot, "--plot")
    published = _published_runs(args.pods) if args.compare_published else None
    if published is not None and trace_name(args.pods) not in published_traces(published):
        raise ReplayInputError(f"--compare-published: {trace_name(args.pods)!r} is not one of the published traces")
    limit = None
    if args.limit is not None:
        from extender.advice.replay.limit import check_limit, load_limit

        limit = load_limit(args.limit)
        check_limit(limit, trace_name(args.pods), seeds, f"--limit: {args.limit}")
    scoring = _scoring(args.scoring_policy)
    interval = _interval(args.arrival_interval)
    workset = load_workset(args.nodes, args.pods, args.orders, args.kubeconfig)
    workset = dataclasses.replace(workset, scoring=scoring, arrival_interval_s=interval)
    sweep, kube = _sweep(workset, policies, seeds, jobs, runs, profile, outage)
    _report(args, sweep, profile, kube, limit, published, outage)
    return 0


def _outage(text: str | None, profile: Any) -> Any:
    """``--outage``: parsed, and refused where it would change nothing."""
    if text is None:
        return None
    if profile is None:
        raise ReplayInputError("--outage: needs --scheduler-config (it models kube-scheduler without the advisor)")
    if profile.extender is None:
        raise ReplayInputError("--outage: the scheduler configuration has no extender, so no advisor to lose")
    from extender.advice.replay.outage import parse_outage

    return parse_outage(text)


def _sweep(
    workset: Any, policies: list[str], seeds: list[int], jobs: int, runs: int, profile: Any, outage: Any
) -> tuple[Any, dict[int, Any]]:
    """The policies' runs, and kube-scheduler's for ``profile`` (if given) as one more column (two with
    an outage: with it, and without)."""
    from extender.advice.replay.progress import ProgressBar
    from extender.advice.replay.run import run_sweep

    bar = ProgressBar(runs, sys.stderr) if sys.stderr.isatty() else None
    kube: dict[int, Any] = {}
    try:
        sweep = run_sweep(workset, policies, seeds, jobs, bar.update if bar else None)
        if profile is not None:
            from extender.advice.replay.kube_run import KUBE_NO_OUTAGE, KUBE_POLICY, run_kube
            from extender.advice.replay.sweep import Sweep

            kube = run_kube(workset, profile, seeds, jobs, bar.update if bar else None, outage)
            both = dict(sweep.runs) | {(KUBE_POLICY, seed): run.curves for seed, run in kube.items()}
            both |= {(KUBE_NO_OUTAGE, seed): run.plain.curves for seed, run in kube.items() if run.plain}
            added = (KUBE_POLICY, KUBE_NO_OUTAGE) if outage is not None else (KUBE_POLICY,)
            sweep = Sweep(sweep.trace, (*sweep.policies, *added), sweep.seeds, both)
    finally:
        if bar is not None:
            bar.close()
    return sweep, kube


def _report(
    args: argparse.Namespace, sweep: Any, profile: Any, kube: dict[int, Any], limit: Any, published: Any, outage: Any
) -> None:
    """The tables on stdout, then the --json and --plot files."""
    from extender.advice.replay.published import compare_published
    from extender.advice.replay.report_table import format_sweep

    print(format_sweep(sweep))
    if profile is not None:
        from extender.advice.replay.kube_run import format_kube_counts

        print()
        print(format_kube_counts(profile, kube, outage))
    if limit is not None:
        from extender.advice.replay.limit import format_distances

        print()
        print(format_distances(sweep, limit))
    if published is not None:
        print()
        print(compare_published(sweep, published))
    if args.json is not None:
        args.json.write_text(json.dumps(_document(sweep, profile, kube, limit, outage), indent=1) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    if args.plot is not None:
        from extender.advice.replay.plot import write_plot

        write_plot(sweep, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)


def _document(sweep: Any, profile: Any, kube: dict[int, Any], limit: Any, outage: Any) -> dict[str, Any]:
    """The --json document: the sweep, with the distance to a limit and kube-scheduler's counts if asked."""
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


def _cmd_replay(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except OSError as exc:  # an output file that could not be written after all
        raise CliError(f"{exc.filename or ''}: {exc.strerror or exc}") from None


def register(commands: Any) -> None:
    """Add `replay` to the command line's subcommands."""
    replay = commands.add_parser(
        "replay",
        help="how many GPUs each policy leaves unusable as a cluster fills: replay a trace of pods",
    )
    replay.add_argument(
        "--nodes", required=True, metavar="FILE|kube", help="openb node CSV, snapshot file, kube or simulated"
    )
    replay.add_argument("--pods", required=True, type=Path, metavar="FILE", help="openb pod CSV or Pod objects")
    replay.add_argument("--orders", type=Path, metavar="DIR", help="shipped orders: <pods stem>.{order,nodes}.txt")
    replay.add_argument("--seeds", default=DEFAULT_SEEDS, metavar="LIST", help="e.g. 42,43 or 42-51 (default)")
    replay.add_argument(
        "--policy", default=None, metavar="NAMES", help="comma-separated policies (default: all of them)"
    )
    replay.add_argument("--jobs", metavar="N", help="processes to spread runs over (default: one per core)")
    replay.add_argument("--json", type=Path, metavar="FILE", help="write the results document (JSON)")
    replay.add_argument("--plot", type=Path, metavar="FILE.png", help="write unallocated %% vs arrived %% curves")
    replay.add_argument(
        "--compare-published", action="store_true", help="print the FGD paper's figures beside the baselines"
    )
    replay.add_argument(
        "--limit",
        type=Path,
        metavar="FILE",
        help='a bound to measure each policy against: JSON {"trace": "default", "seeds": {"42": 3.09, ...}} giving,'
        " per seed, the least unallocated GPU %% at 100 %% arrived any placement of those arrivals reaches"
        ' ("trace" optional; it must match the pods). Prints each policy\'s distance to it (mean over the seeds'
        ' with a bound) and adds "limit" and per policy "distance_to_limit" to --json',
    )
    replay.add_argument("--kubeconfig", help="kubeconfig file for --nodes kube")
    replay.add_argument(
        "--scoring-policy",
        type=Path,
        metavar="FILE",
        help="the advisor's scoring policy (YAML or JSON, what the extender's --policy reads): e.g."
        " reserve_whole_gpus, reserve_hold_limit_s (default: the extender's defaults)",
    )
    replay.add_argument(
        "--arrival-interval",
        metavar="SECONDS",
        help="seconds between two arrivals, the clock a held pod's reserve_hold_limit_s runs on"
        " (default 352: the default trace's pace over its last 30 days)",
    )
    replay.add_argument(
        "--scheduler-config",
        metavar="FILE|kube-default|printed|printed-managed",
        help="also replay through kube-scheduler's scoring for this KubeSchedulerConfiguration (column"
        " kube-scheduler; with no --policy, only that): kube-default = kube-scheduler's defaults without the"
        " advisor, printed / printed-managed = what `gpu-advisor scheduler-config` [--managed-resources] prints",
    )
    replay.add_argument(
        "--outage",
        metavar="START:LENGTH",
        help="with --scheduler-config: the advisor is away while LENGTH pods arrive, after the first START"
        " (pods of the arrival order, or percentages of them: 40%%:140). An extender that is not ignorable"
        " fails those pods' cycles, so they wait and are scheduled once it is back; an ignorable one is"
        " skipped and kube-scheduler binds them by its own plugins, blind to GPU shares (over-committed"
        " pods and nodes are counted). Adds the column kube-scheduler (no outage): the same runs without it",
    )
    replay.set_defaults(handler=_cmd_replay)
