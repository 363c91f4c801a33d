"""Runs of the kube-scheduler replay over seeds, binned as the plain replay's runs are.

Each seed's arrival order (shipped, or drawn) goes through ``kube_scheduler.kube_replay``; the
selectHost draw among equal totals is seeded with the same seed. Runs are independent, so they
spread over processes as the plain sweep's do.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from extender.advice.replay.kube_profile import KubeSchedulerProfile
from extender.advice.replay.kube_scheduler import kube_replay
from extender.advice.replay.metrics import alloc_curve, frag_curve
from extender.advice.replay.run import Workset
from extender.advice.replay.sweep import RunCurves

__all__ = ["KUBE_POLICY", "KubeRun", "format_kube_counts", "kube_counts_json", "run_kube", "run_kube_one"]

KUBE_POLICY = "kube-scheduler"


@dataclass(frozen=True, slots=True)
class KubeRun:
    """One seed: the binned curves and what kube-scheduler placed without the advisor."""

    curves: RunCurves
    without_advisor: int
    overcommitted_pods: int
    overcommitted_nodes: int
    sampled: int
    off_best: int = 0


def run_kube_one(workset: Workset, profile: KubeSchedulerProfile, seed: int) -> KubeRun:
    """One seed of the kube-scheduler replay."""
    started = time.perf_counter()
    result = kube_replay(workset.nodes, workset.order(seed), profile, original_pods=workset.pods, name=KUBE_POLICY)
    seconds = time.perf_counter() - started
    run = result.run
    curves = RunCurves(KUBE_POLICY, seed, tuple(alloc_curve(run)), tuple(frag_curve(run)), run.dropped, seconds)
    return KubeRun(
        curves,
        result.without_advisor,
        result.overcommitted_pods,
        result.overcommitted_nodes,
        result.sampled,
        result.off_best,
    )


def run_kube(
    workset: Workset,
    profile: KubeSchedulerProfile,
    seeds: list[int],
    jobs: int = 1,
    on_done: Callable[[RunCurves], None] | None = None,
) -> dict[int, KubeRun]:
    """Every seed, on ``jobs`` processes; ``on_done`` hears of each finished run."""
    for seed in seeds:
        workset.order(seed)  # a missing shipped order fails here, before any work starts
    runs: dict[int, KubeRun] = {}
    if jobs <= 1 or len(seeds) <= 1:
        for seed in seeds:
            runs[seed] = run_kube_one(workset, profile, seed)
            if on_done is not None:
                on_done(runs[seed].curves)
        return runs
    with ProcessPoolExecutor(max_workers=min(jobs, len(seeds))) as pool:
        futures = [pool.submit(run_kube_one, workset, profile, seed) for seed in seeds]
        for future in as_completed(futures):
            done = future.result()
            runs[done.curves.seed] = done
            if on_done is not None:
                on_done(done.curves)
    return {seed: runs[seed] for seed in seeds}


def kube_counts_json(profile: KubeSchedulerProfile, runs: dict[int, KubeRun]) -> dict[str, Any]:
    """The ``kube_scheduler`` section of the ``--json`` document."""
    return {
        "profile": profile.describe(),
        "nodes_sampled": next(iter(runs.values())).sampled if runs else None,
        "seeds": {
            str(seed): {
                "gpu_pods_without_advisor": run.without_advisor,
                "overcommitted_pods": run.overcommitted_pods,
                "overcommitted_nodes": run.overcommitted_nodes,
                "gpu_pods_off_advisors_best": run.off_best,
                "dropped": run.curves.dropped,
            }
            for seed, run in runs.items()
        },
    }


def format_kube_counts(profile: KubeSchedulerProfile, runs: dict[int, KubeRun]) -> str:
    """Lines under the tables: the profile, the sampling, and per run (mean, range over seeds) what
    kube-scheduler placed without the advisor."""
    lines = [profile.describe()]
    if not runs:
        return lines[0]
    lines.append(f"kube-scheduler stops at {next(iter(runs.values())).sampled} feasible nodes per pod")
    for label, values in (
        ("GPU pods placed without the advisor", [r.without_advisor for r in runs.values()]),
        (
            "of them on GPUs already taken (over-committed; their GPU request counts as arrived, not allocated)",
            [r.overcommitted_pods for r in runs.values()],
        ),
        ("nodes over-committed", [r.overcommitted_nodes for r in runs.values()]),
        ("GPU pods bound off the advisor's best node", [r.off_best for r in runs.values()]),
    ):
        lines.append(f"{label}: {sum(values) / len(values):.1f} per run ({min(values)}–{max(values)})")
    return "\n".join(lines)
