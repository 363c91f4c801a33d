"""Many independent runs spread over processes, results in a JSON-able shape.

Each run is a pure function of (trace, policy, seed, order source), so a worker loads what it needs
itself (cached per process) and only small curves travel back.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from extender.advice.replay import openb
from extender.advice.replay.advisor_policy import ADVISOR_POLICIES
from extender.advice.replay.arrivals import generate_order
from extender.advice.replay.baselines import POLICIES
from extender.advice.replay.engine import RunResult, replay
from extender.advice.replay.metrics import alloc_curve, unallocated_at
from extender.advice.replay.specs import ArrivalOrder, NodeSpec, Pod
from extender.advice.replay.workload import typical_pods

# Every policy a run may name: the published baselines and the advisor's own.
REGISTRY = {**POLICIES, **ADVISOR_POLICIES}


@dataclass(frozen=True, slots=True)
class Job:
    """One run: `orders_dir` holds shipped orders, or None to draw them with the seeded generator."""

    traces: Path
    trace: str
    policy: str
    seed: int
    orders_dir: Path | None


@lru_cache(maxsize=8)
def _inputs(traces: Path, trace: str) -> tuple[tuple[NodeSpec, ...], tuple[Pod, ...]]:
    return openb.load_nodes(traces / "openb" / openb.NODE_LIST), openb.load_pods(openb.pod_csv(traces, trace))


@lru_cache(maxsize=8)
def _shipped(orders_dir: Path, traces: Path, trace: str) -> dict[int, ArrivalOrder]:
    nodes, pods = _inputs(traces, trace)
    stem = f"openb_pod_list_{trace}"
    return openb.load_orders(orders_dir / f"{stem}.order.txt", orders_dir / f"{stem}.nodes.txt", pods, len(nodes))


def order_for(job: Job) -> ArrivalOrder:
    """The arrival order of a job (shipped, or generated from the seed)."""
    nodes, pods = _inputs(job.traces, job.trace)
    if job.orders_dir is None:
        return generate_order(pods, nodes, job.seed)
    orders = _shipped(job.orders_dir, job.traces, job.trace)
    if job.seed not in orders:
        raise openb.ReplayInputError(f"{job.orders_dir}: no order for {job.trace} seed {job.seed}")
    return orders[job.seed]


def run_job(job: Job) -> RunResult:
    """Replay one job; F (frag) is measured against the trace's typical pods."""
    nodes, pods = _inputs(job.traces, job.trace)
    workload = typical_pods(pod.shape for pod in pods)
    return replay(nodes, order_for(job), REGISTRY[job.policy](), original_pods=pods, frag_workload=workload)


def _curve_of(job: Job) -> list[float | None]:
    return alloc_curve(run_job(job))


def run_many(
    trace: str,
    policies: list[str],
    seeds: list[int],
    orders_dir: Path | None,
    jobs: int = 1,
    traces: Path | None = None,
) -> dict[str, Any]:
    """Every (policy, seed) of a trace; `{"trace", "policies": {name: {"seeds": {seed: {"alloc_pct":
    {"0".."130": value}}}, "unallocated_at_100": {"mean", "sd"}}}}`."""
    unknown = [p for p in policies if p not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown policies {unknown}; known: {list(REGISTRY)}")
    root = traces if traces is not None else openb.traces_dir()
    work = [Job(root, trace, policy, seed, orders_dir) for policy in policies for seed in seeds]
    if jobs <= 1:
        curves = [_curve_of(job) for job in work]
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            curves = list(pool.map(_curve_of, work))
    out: dict[str, Any] = {"trace": trace, "policies": {}}
    for policy in policies:
        mine = [curve for job, curve in zip(work, curves, strict=True) if job.policy == policy]
        at_100 = unallocated_at(mine, 100)
        out["policies"][policy] = {
            "seeds": {
                str(seed): {"alloc_pct": {str(x): value for x, value in enumerate(curve)}}
                for seed, curve in zip(seeds, mine, strict=True)
            },
            "unallocated_at_100": {"mean": at_100.mean, "sd": at_100.sd},
        }
    return out
