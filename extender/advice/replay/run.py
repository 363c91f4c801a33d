"""Many independent runs spread over processes, and their results in a JSON-able shape.

A run is a pure function of (cluster, pods, policy, seed, order): `run_one` takes exactly those, so
the executor is the only moving part. `run_sweep` uses local processes, each handed the `Workset`
once; the command line plans its runs with `fanout` (several traces, kube-scheduler's column) and
runs them on local processes or as Ray tasks, each ending in this same `run_one`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from extender.advice.replay import openb
from extender.advice.replay.arrivals import generate_order
from extender.advice.replay.engine import replay
from extender.advice.replay.metrics import alloc_curve, frag_curve
from extender.advice.replay.moves import split_defrag
from extender.advice.replay.policies import make_policy, unknown_policies
from extender.advice.replay.report_json import sweep_json
from extender.advice.replay.run_result import RunResult
from extender.advice.replay.specs import ArrivalOrder, NodeSpec, Pod
from extender.advice.replay.sweep import RunCurves, Sweep
from extender.advice.replay.waiting import ARRIVAL_INTERVAL_S
from extender.advice.replay.workload import typical_pods
from extender.scoring.policy import ScoringPolicy

__all__ = ["Job", "Workset", "order_for", "run_job", "run_many", "run_one", "run_sweep"]


@dataclass(frozen=True, slots=True)
class Workset:
    """What every run of a sweep shares: the cluster, the original pods, and the arrival orders.

    `orders` holds shipped orders by seed; None draws each seed's order with the seeded generator.
    `scoring` is the advisor's scoring policy (None: the defaults), `arrival_interval_s` the seconds
    between arrivals that a held pod's limit is counted in (``waiting``).
    """

    name: str
    nodes: tuple[NodeSpec, ...]
    pods: tuple[Pod, ...]
    orders: Mapping[int, ArrivalOrder] | None = None
    scoring: ScoringPolicy | None = None
    arrival_interval_s: float = ARRIVAL_INTERVAL_S

    def order(self, seed: int) -> ArrivalOrder:
        """The arrival order of a seed (shipped, or drawn as the simulator draws it)."""
        if self.orders is None:
            return generate_order(self.pods, self.nodes, seed)
        if seed not in self.orders:
            shipped = ", ".join(str(s) for s in sorted(self.orders)) or "none"
            raise openb.ReplayInputError(f"no arrival order for seed {seed} (shipped seeds: {shipped})")
        return self.orders[seed]


def replay_one(workset: Workset, policy: str, seed: int) -> RunResult:
    """Replay one (policy, seed); F (frag) is measured against the pods' typical-pod workload."""
    workload = typical_pods(pod.shape for pod in workset.pods)
    order = workset.order(seed)
    return replay(
        workset.nodes,
        order,
        make_policy(policy, workset.scoring),
        original_pods=workset.pods,
        frag_workload=workload,
        arrival_interval_s=workset.arrival_interval_s,
        defrag=max(split_defrag(policy)[1], 0),
    )


def run_one(workset: Workset, policy: str, seed: int) -> RunCurves:
    """Replay one (policy, seed) and bin it; a pure function of its arguments (and the clock)."""
    started = time.perf_counter()
    result = replay_one(workset, policy, seed)
    seconds = time.perf_counter() - started
    alloc, frag = tuple(alloc_curve(result)), tuple(frag_curve(result))
    moved = (result.moves, result.given_back)
    return RunCurves(policy, seed, alloc, frag, result.dropped, seconds, result.waits, *moved)


# A worker process receives the workset once (pickled by the pool's initializer), not once per run.
_worker_workset: Workset | None = None


def _install(workset: Workset) -> None:
    global _worker_workset
    _worker_workset = workset


def _run_in_worker(policy: str, seed: int) -> RunCurves:
    if _worker_workset is None:
        raise RuntimeError("worker started without a workset")
    return run_one(_worker_workset, policy, seed)


def run_sweep(
    workset: Workset,
    policies: list[str],
    seeds: list[int],
    jobs: int = 1,
    on_done: Callable[[RunCurves], None] | None = None,
) -> Sweep:
    """Every (policy, seed) of a workset on `jobs` processes; `on_done` hears of each finished run."""
    unknown = unknown_policies(policies)
    if unknown:
        raise ValueError(f"unknown policies {unknown}")
    for seed in seeds:
        workset.order(seed)  # a missing shipped order fails here, before any work starts
    work = [(policy, seed) for policy in policies for seed in seeds]
    runs: dict[tuple[str, int], RunCurves] = {}
    if jobs <= 1 or len(work) <= 1:
        for policy, seed in work:
            runs[(policy, seed)] = done = run_one(workset, policy, seed)
            if on_done is not None:
                on_done(done)
    else:
        with ProcessPoolExecutor(max_workers=min(jobs, len(work)), initializer=_install, initargs=(workset,)) as pool:
            futures = [pool.submit(_run_in_worker, policy, seed) for policy, seed in work]
            for future in as_completed(futures):
                done = future.result()
                runs[(done.policy, done.seed)] = done
                if on_done is not None:
                    on_done(done)
    return Sweep(workset.name, tuple(policies), tuple(seeds), runs)


# The published traces by name: the openb node list, a pod list, and the shipped orders if asked.


@dataclass(frozen=True, slots=True)
class Job:
    """One run of a published trace: `orders_dir` holds shipped orders, or None to draw them."""

    traces: Path
    trace: str
    policy: str
    seed: int
    orders_dir: Path | None


@lru_cache(maxsize=8)
def published_workset(traces: Path, trace: str, orders_dir: Path | None) -> Workset:
    """A published trace (`default`, `multigpu50`, ...) read from the trace folder."""
    nodes = openb.load_nodes(traces / "openb" / openb.NODE_LIST)
    pods = openb.load_pods(openb.pod_csv(traces, trace))
    if orders_dir is None:
        return Workset(trace, nodes, pods)
    stem = f"openb_pod_list_{trace}"
    orders = openb.load_orders(orders_dir / f"{stem}.order.txt", orders_dir / f"{stem}.nodes.txt", pods, len(nodes))
    return Workset(trace, nodes, pods, orders)


def order_for(job: Job) -> ArrivalOrder:
    """The arrival order of a job (shipped, or generated from the seed)."""
    return published_workset(job.traces, job.trace, job.orders_dir).order(job.seed)


def run_job(job: Job) -> RunResult:
    """Replay one job of a published trace."""
    return replay_one(published_workset(job.traces, job.trace, job.orders_dir), job.policy, job.seed)


def run_many(
    trace: str,
    policies: list[str],
    seeds: list[int],
    orders_dir: Path | None,
    jobs: int = 1,
    traces: Path | None = None,
) -> dict[str, Any]:
    """Every (policy, seed) of a published trace, in the `--json` shape (`report_json.sweep_json`)."""
    root = traces if traces is not None else openb.traces_dir()
    return sweep_json(run_sweep(published_workset(root, trace, orders_dir), policies, seeds, jobs))
