"""Seconds a sweep takes through a local Ray against `--jobs N` local processes, in the same run.

    python benchmarks/replay_ray.py [--traces default,multigpu50,gpushare100,gpuspec33] [--policies FGD,BestFit]
                                    [--seeds 42-51] [--jobs 2] [--repeat 1]

Reads the openb trace from $GPU_ADVISOR_TRACES (or `shared/traces` beside the repository), with the
shipped arrival orders where there are some. Both sides run the very same tasks (`fanout.plan`) after
the traces are loaded; `--jobs` on a process pool of N, Ray on a local Ray of N CPUs started for the
sweep (its start and shutdown timed apart, and in the total, as `gpu-advisor replay --ray` pays them).
With `--repeat` the two alternate, so both see the same load. Prints each side's seconds, the ratio,
the overhead per run, whether every bin of every run is identical, and the load average. Goal on a
2-core machine: 4 traces x 2 policies x 10 seeds through Ray in at most 1.15 x the time of `--jobs 2`.
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # keep this folder's scripts (benchmarks/extender.py) from shadowing the packages

import argparse
import os
import time
from typing import Any

from extender.advice.replay import openb
from extender.advice.replay.fanout import Task, plan, run_local
from extender.advice.replay.run import Workset, published_workset
from gpu_advisor.cli.replay import parse_policies, parse_seeds
from gpu_advisor.replay_ray import LOCAL, ray_session, run_on_ray

GOAL_RATIO = 1.15
Results = dict[tuple[int, str, int], Any]


def _load(names: list[str]) -> list[Workset]:
    traces = openb.traces_dir()
    orders = traces / "fgd-order"
    return [
        published_workset(traces, name, orders if (orders / f"openb_pod_list_{name}.order.txt").is_file() else None)
        for name in names
    ]


def _with_jobs(worksets: list[Workset], tasks: list[Task], jobs: int) -> tuple[float, Results]:
    results: Results = {}
    started = time.perf_counter()
    run_local(worksets, tasks, lambda task, result: results.__setitem__(task.key, result), jobs)
    return time.perf_counter() - started, results


def _with_ray(worksets: list[Workset], tasks: list[Task], cpus: int) -> tuple[float, float, Results]:
    """(total seconds, of them starting and stopping Ray, results)."""
    results: Results = {}
    started = time.perf_counter()
    with ray_session(LOCAL, cpus):
        up = time.perf_counter()
        run_on_ray(worksets, tasks, lambda task, result: results.__setitem__(task.key, result))
        swept = time.perf_counter()
    total = time.perf_counter() - started
    return total, total - (swept - up), results


def _same(a: Results, b: Results) -> bool:
    """Every bin of every run, and the pods dropped (the seconds a run took aside)."""
    return a.keys() == b.keys() and all(
        (a[k].alloc, a[k].frag, a[k].dropped) == (b[k].alloc, b[k].frag, b[k].dropped) for k in a
    )


def _load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--traces", default="default,multigpu50,gpushare100,gpuspec33")
    parser.add_argument("--policies", default="FGD,BestFit")
    parser.add_argument("--seeds", default="42-51")
    parser.add_argument("--jobs", type=int, default=2, help="processes, and the local Ray's CPUs (default 2)")
    parser.add_argument("--repeat", type=int, default=1, help="alternate the two this many times")
    args = parser.parse_args()
    if not (openb.traces_dir() / "openb" / openb.NODE_LIST).is_file():
        print(f"no trace folder at {openb.traces_dir()}; set {openb.TRACES_ENV}", file=sys.stderr)
        return 2
    names = [name.strip() for name in args.traces.split(",") if name.strip()]
    policies, seeds = parse_policies(args.policies), parse_seeds(args.seeds)
    worksets = _load(names)
    tasks = plan(worksets, policies, seeds)
    print(
        f"{len(names)} traces x {len(policies)} policies x {len(seeds)} seeds = {len(tasks)} runs"
        f" ({', '.join(names)}; {', '.join(policies)}); {os.cpu_count()} CPU(s); load average {_load_average()}"
    )
    for attempt in range(max(1, args.repeat)):
        jobs_s, by_jobs = _with_jobs(worksets, tasks, args.jobs)
        print(f"[{attempt + 1}] --jobs {args.jobs}: {jobs_s:.1f} s   load average {_load_average()}", flush=True)
        ray_s, fixed_s, by_ray = _with_ray(worksets, tasks, args.jobs)
        print(
            f"[{attempt + 1}] --ray (local, {args.jobs} CPUs): {ray_s:.1f} s, of it {fixed_s:.1f} s starting and"
            f" stopping Ray   load average {_load_average()}"
        )
        per_run = (ray_s - fixed_s - jobs_s) / len(tasks)
        print(
            f"[{attempt + 1}] ratio {ray_s / jobs_s:.3f} (goal <= {GOAL_RATIO}); without Ray's start and stop"
            f" {(ray_s - fixed_s) / jobs_s:.3f}; per-run overhead {per_run * 1000:+.0f} ms;"
            f" identical figures: {_same(by_jobs, by_ray)}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
