"""Seconds one replay of a trace takes, per policy: every pod scoring every node, as `gpu-advisor replay` runs it.

    python benchmarks/replay.py [--trace default] [--seed 42] [--policies advisor,FGD,...] [--repeat N]

Reads the openb trace from $GPU_ADVISOR_TRACES (or `shared/traces` beside the repository), with the
shipped arrival order of the seed when there is one (default: 10,866 arrivals on 1,213 nodes). Each
figure is one run in this process, from an empty cluster and empty memos, binning included; loading
the files is timed apart. Goal: the advisor's policy ≤ 30 s on a 2-core machine.
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # keep this folder's scripts (benchmarks/extender.py) from shadowing the packages

import argparse
import os
import time

from extender.advice.replay import openb
from extender.advice.replay.policies import policy_names
from extender.advice.replay.run import published_workset, run_one

GOAL_S = 30.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trace", default="default", help="a published trace (default: default)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--policies", default=",".join(policy_names()), help="comma-separated (default: all)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per policy; the fastest is reported")
    args = parser.parse_args()
    traces = openb.traces_dir()
    if not (traces / "openb" / openb.NODE_LIST).is_file():
        print(f"no trace folder at {traces}; set {openb.TRACES_ENV}", file=sys.stderr)
        return 2
    orders = traces / "fgd-order"
    shipped = (orders / f"openb_pod_list_{args.trace}.order.txt").is_file()
    started = time.perf_counter()
    workset = published_workset(traces, args.trace, orders if shipped else None)
    order = workset.order(args.seed)
    loaded = time.perf_counter() - started
    print(
        f"{args.trace} seed {args.seed}: {len(order.pods)} arrivals on {len(workset.nodes)} nodes"
        f" ({'shipped' if shipped else 'drawn'} order), loaded in {loaded:.1f} s; {os.cpu_count()} CPU(s)"
    )
    for policy in args.policies.split(","):
        runs = [run_one(workset, policy, args.seed) for _ in range(max(1, args.repeat))]
        best = min(runs, key=lambda run: run.seconds)
        unallocated = "—" if best.alloc[100] is None else f"{100 - best.alloc[100]:.2f} %"
        goal = f"  (goal ≤ {GOAL_S:.0f} s)" if policy.startswith("advisor") else ""
        print(f"{policy:>14}: {best.seconds:6.1f} s   unallocated at 100 %: {unallocated}{goal}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
