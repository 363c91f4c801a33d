"""`gpu-advisor replay`: what-if placement quality over a whole cluster and a stream of pods.

Replays the pods' arrivals (shipped orders, or drawn per seed) through each policy and prints
unallocated GPU % and frag/total % at 75-130 % arrived demand (mean ± sd over seeds); `--json`,
`--plot` and `--compare-published` add the contract's document, a PNG and the FGD paper's figures.
Bad input is one line on stderr and exit 2 (the error tree's `InputError`s, reported by `exits`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from extender.advice.replay.openb import ReplayInputError
from gpu_advisor.cli.exits import CliError
from gpu_advisor.cli.renamed_flags import Replaced, resolve_replay_policy
from gpu_advisor.cli.replay_defrag import add_defrag_flag, with_moves

__all__ = ["DEFAULT_SEEDS", "parse_policies", "parse_seeds", "register"]

DEFAULT_SEEDS = "42-51"
LOCAL_RAY = "local"  # `--ray` alone (gpu_advisor.replay_ray.LOCAL; Ray is not imported unless asked for)


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
            raise ReplayInputError(f"--policies: no policy {part!r}; choose from {', '.join(known.values())}")
        if known[part.lower()] not in chosen:
            chosen.append(known[part.lower()])
    if not chosen:
        raise ReplayInputError("--policies: name at least one policy")
    return chosen


def _jobs(text: str | None, runs: int) -> int:
    if text is None:
        return max(1, min(os.cpu_count() or 1, runs))
    if not text.isdigit() or int(text) < 1:
        raise ReplayInputError(f"--jobs: {text!r} is not a number of processes (1 or more)")
    return int(text)


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

    pod_folder = pods.resolve() if pods.is_dir() else pods.resolve().parent
    for folder in (pod_folder.parent, openb.traces_dir()):
        if (folder / ALLOC_CSV).is_file():
            return load_published_alloc(folder)
    raise ReplayInputError(
        f"--compare-published: no {ALLOC_CSV} beside {pods} or in ${openb.TRACES_ENV} (the folder holding openb/)"
    )


def _run(args: argparse.Namespace) -> int:
    from extender.advice.replay.policies import policy_names
    from extender.advice.replay.published import published_traces
    from gpu_advisor.cli.replay_report import report
    from gpu_advisor.replay_inputs import (
        arrival_interval,
        checked_limit,
        load_outage,
        load_scheduler_profile,
        load_scoring,
        load_worksets,
        pod_files,
        trace_name,
    )

    resolve_replay_policy(args)
    profile = load_scheduler_profile(args.scheduler_config) if args.scheduler_config is not None else None
    outage = load_outage(args.outage, profile)
    policies = with_moves(_policies(args.policies, profile, policy_names), args.defrag)
    seeds = parse_seeds(args.seeds)
    published = _published_runs(args.pods[0]) if args.compare_published else None
    files, left_out = pod_files(args.pods, published_traces(published) if published is not None else None)
    if left_out:
        print(f"not replayed (no published figures): {', '.join(left_out)}", file=sys.stderr)
    runs = (len(policies) + (profile is not None) + (outage is not None)) * len(seeds) * len(files)
    jobs = _jobs(args.jobs, runs)
    if args.ray is not None and args.ray != LOCAL_RAY and args.jobs is not None:
        raise ReplayInputError("--jobs: the Ray cluster decides where runs go; --jobs sizes a local Ray only")
    _writable(args.json, "--json")
    _writable(args.plot, "--plot")
    names = [trace_name(pods) for pods in files]
    unpublished = [name for name in names if published is not None and name not in published_traces(published)]
    if unpublished:
        raise ReplayInputError(f"--compare-published: {unpublished[0]!r} is not one of the published traces")
    limit = checked_limit(args.limit, files, seeds)
    scoring, interval = load_scoring(args.policy), arrival_interval(args.arrival_interval)
    worksets = [
        dataclasses.replace(workset, scoring=scoring, arrival_interval_s=interval)
        for workset in load_worksets(args.nodes, files, args.orders, args.kubeconfig)
    ]
    traces = _sweep(args, worksets, policies, seeds, jobs, profile, outage)
    report(args, traces, profile, limit, published, outage)
    return 0


def _policies(text: str | None, profile: Any, every: Callable[[], Any]) -> list[str]:
    """The policies asked for: all of them, or with --scheduler-config and no --policies only kube-scheduler's."""
    if profile is not None and text is None:
        return []
    return parse_policies(text if text is not None else ",".join(every()))


@contextmanager
def _progress(total: int, for_log: bool) -> Iterator[Callable[[str], None] | None]:
    """A bar on a terminal; else, for a Ray sweep's log (long runs, read later), a line per run; else none."""
    from extender.advice.replay.progress import ProgressBar, ProgressLog

    progress: ProgressBar | ProgressLog | None = None
    if sys.stderr.isatty():
        progress = ProgressBar(total, sys.stderr)
    elif for_log:
        progress = ProgressLog(total, sys.stderr)
    try:
        yield progress.step if progress is not None else None
    finally:
        if progress is not None:
            progress.close()


def _keep(
    results: dict[tuple[int, str, int], Any],
    step: Callable[[str], None] | None,
    worksets: list[Any],
    task: Any,
    result: Any,
) -> None:
    """A finished run: keep its result, and name it to the progress (with its trace when there are several)."""
    results[task.key] = result
    if step is not None:
        step(task.name(worksets) if len(worksets) > 1 else f"{task.policy} seed {task.seed}")


def _sweep(
    args: argparse.Namespace,
    worksets: list[Any],
    policies: list[str],
    seeds: list[int],
    jobs: int,
    profile: Any,
    outage: Any = None,
) -> list[Any]:
    """Every trace's runs (kube-scheduler's as one more column for ``profile``, two with an outage: with it
    and without), on local processes or Ray."""
    from extender.advice.replay.fanout import assemble, plan, run_local

    tasks = plan(worksets, policies, seeds, profile, outage)
    results: dict[tuple[int, str, int], Any] = {}
    if args.ray is None:
        with _progress(len(tasks), for_log=False) as step:
            run_local(worksets, tasks, lambda task, result: _keep(results, step, worksets, task, result), jobs)
    else:
        from gpu_advisor.replay_ray import ray_session, run_on_ray

        with ray_session(args.ray, jobs if args.jobs is not None else None), _progress(len(tasks), True) as step:
            run_on_ray(worksets, tasks, lambda task, result: _keep(results, step, worksets, task, result))
    return assemble(worksets, policies, seeds, results, with_kube=profile is not None)


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
    _inputs(replay)
    _outputs(replay)
    _models(replay)
    replay.set_defaults(handler=_cmd_replay)


def _inputs(replay: Any) -> None:
    """What is replayed, and where: traces, orders, seeds, policies, processes or Ray."""
    replay.add_argument(
        "--nodes", required=True, metavar="FILE|kube", help="openb node CSV, snapshot file, kube or simulated"
    )
    replay.add_argument(
        "--pods",
        required=True,
        type=Path,
        action="append",
        metavar="FILE|DIR",
        help="openb pod CSV or Pod objects; a folder: its openb_pod_list_*.csv (with --compare-published, the"
        " published traces among them); give it again for more traces in one sweep",
    )
    replay.add_argument("--orders", type=Path, metavar="DIR", help="shipped orders: <pods stem>.{order,nodes}.txt")
    replay.add_argument("--seeds", default=DEFAULT_SEEDS, metavar="LIST", help="e.g. 42,43 or 42-51 (default)")
    replay.add_argument("--policies", metavar="NAMES", help="comma-separated policies (default: all of them)")
    add_defrag_flag(replay)
    replay.add_argument(
        "--jobs", metavar="N", help="processes to spread runs over, or a local Ray's CPUs (default: one per core)"
    )
    replay.add_argument(
        "--ray",
        nargs="?",
        const=LOCAL_RAY,
        metavar="ADDRESS",
        help="run each (trace, policy, seed) as a Ray task (pip install 'gpu-advisor[ray]'): without ADDRESS on a"
        " Ray started on this machine for the command (loopback only); auto = the cluster this machine is in"
        " (inside a RayJob); ray://HEAD:10001 = a cluster's Ray client port",
    )


def _outputs(replay: Any) -> None:
    """What is written beside the tables: JSON, plots, the published figures, a limit."""
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


def _models(replay: Any) -> None:
    """How the cluster is modelled: a live cluster's nodes, the advisor's policy, its clock, kube-scheduler."""
    replay.add_argument("--kubeconfig", help="kubeconfig file for --nodes kube")
    replay.add_argument(
        "--policy",
        metavar="FILE",
        help="the advisor's scoring policy (YAML or JSON, as `serve --policy` reads it): e.g."
        " reserve_whole_gpus, reserve_hold_limit_s (default: the extender's defaults)",
    )
    replay.add_argument("--scoring-policy", action=Replaced, now="--policy", type=Path)
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
        " kube-scheduler; with no --policies, only that): kube-default = kube-scheduler's defaults without the"
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
