"""Runs of the kube-scheduler replay over seeds, binned as the plain replay's runs are.

Each seed's arrival order (shipped, or drawn) goes through ``kube_scheduler.kube_replay``; the
selectHost draw among equal totals is seeded with the same seed. Runs are independent, so they
spread over processes as the plain sweep's do. With an outage of the advisor, each seed is also run
without it (column ``kube-scheduler (no outage)``), so what the outage cost can be read beside it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from typing import Any

from extender.advice.replay.kube_profile import KubeSchedulerProfile
from extender.advice.replay.kube_scheduler import kube_replay
from extender.advice.replay.metrics import alloc_curve, frag_curve
from extender.advice.replay.openb import ReplayInputError
from extender.advice.replay.outage import Outage
from extender.advice.replay.run import Workset
from extender.advice.replay.sweep import RunCurves

__all__ = ["KUBE_NO_OUTAGE", "KUBE_POLICY", "KubeRun", "format_kube_counts", "kube_counts_json", "run_kube"]

KUBE_POLICY = "kube-scheduler"
KUBE_NO_OUTAGE = "kube-scheduler (no outage)"


@dataclass(frozen=True, slots=True)
class KubeRun:
    """One seed: the binned curves and what kube-scheduler placed without the advisor."""

    curves: RunCurves
    without_advisor: int
    overcommitted_pods: int
    overcommitted_nodes: int
    sampled: int
    off_best: int = 0
    waited: int = 0  # pods that waited for the advisor through the outage
    blind: int = 0  # pods kube-scheduler bound alone while the advisor was away
    blind_gpu: int = 0
    window: range = range(0)  # the indexes of the pods that arrived while the advisor was away
    pods: int = 0  # pods in the seed's arrival order
    plain: KubeRun | None = None  # the same seed without the outage

    @property
    def unallocated(self) -> float | None:
        """Unallocated GPU % at 100 % arrived (None when the run never got near it)."""
        allocated = self.curves.alloc[100]
        return None if allocated is None else round(100.0 - allocated, 2)


def _replay(workset: Workset, profile: KubeSchedulerProfile, seed: int, outage: Outage | None, name: str) -> KubeRun:
    order = workset.order(seed)
    window = outage.window(len(order.pods)) if outage is not None else range(0)
    started = time.perf_counter()
    result = kube_replay(workset.nodes, order, profile, original_pods=workset.pods, name=name, outage=window)
    seconds = time.perf_counter() - started
    run = result.run
    curves = RunCurves(name, seed, tuple(alloc_curve(run)), tuple(frag_curve(run)), run.dropped, seconds)
    counts = (result.without_advisor, result.overcommitted_pods, result.overcommitted_nodes, result.sampled)
    return KubeRun(
        curves, *counts, result.off_best, result.waited, result.blind, result.blind_gpu, window, len(order.pods)
    )


def run_kube_one(workset: Workset, profile: KubeSchedulerProfile, seed: int, outage: Outage | None = None) -> KubeRun:
    """One seed of the kube-scheduler replay (and, with an outage, the same seed without it)."""
    run = _replay(workset, profile, seed, outage, KUBE_POLICY)
    if outage is None:
        return run
    plain = _replay(workset, profile, seed, None, KUBE_NO_OUTAGE)
    return replace(run, plain=plain)


def run_kube(
    workset: Workset,
    profile: KubeSchedulerProfile,
    seeds: list[int],
    jobs: int = 1,
    on_done: Callable[[RunCurves], None] | None = None,
    outage: Outage | None = None,
) -> dict[int, KubeRun]:
    """Every seed, on ``jobs`` processes; ``on_done`` hears of each finished run."""
    for seed in seeds:
        order = workset.order(seed)  # a missing shipped order or a window outside it fails here, before any work
        if outage is not None:
            try:
                outage.window(len(order.pods))
            except ReplayInputError as exc:
                raise ReplayInputError(f"{exc} (seed {seed})") from None

    def heard(run: KubeRun) -> None:
        if on_done is not None:
            on_done(run.curves)
            if run.plain is not None:
                on_done(run.plain.curves)

    runs: dict[int, KubeRun] = {}
    if jobs <= 1 or len(seeds) <= 1:
        for seed in seeds:
            runs[seed] = run_kube_one(workset, profile, seed, outage)
            heard(runs[seed])
        return runs
    with ProcessPoolExecutor(max_workers=min(jobs, len(seeds))) as pool:
        futures = [pool.submit(run_kube_one, workset, profile, seed, outage) for seed in seeds]
        for future in as_completed(futures):
            done = future.result()
            runs[done.curves.seed] = done
            heard(done)
    return {seed: runs[seed] for seed in seeds}


def _outage_json(run: KubeRun) -> dict[str, Any]:
    plain = run.plain
    assert plain is not None
    return {
        "first_pod_away": run.window.start + 1,
        "last_pod_away": run.window.stop,
        "pods_in_order": run.pods,
        "pods_waited_for_advisor": run.waited,
        "pods_bound_while_away": run.blind,
        "gpu_pods_bound_while_away": run.blind_gpu,
        "unallocated_at_100": run.unallocated,
        "without_outage": {
            "unallocated_at_100": plain.unallocated,
            "overcommitted_pods": plain.overcommitted_pods,
            "overcommitted_nodes": plain.overcommitted_nodes,
        },
    }


def kube_counts_json(
    profile: KubeSchedulerProfile, runs: dict[int, KubeRun], outage: Outage | None = None
) -> dict[str, Any]:
    """The ``kube_scheduler`` section of the ``--json`` document."""
    seeds: dict[str, Any] = {}
    for seed, run in runs.items():
        seeds[str(seed)] = {
            "gpu_pods_without_advisor": run.without_advisor,
            "overcommitted_pods": run.overcommitted_pods,
            "overcommitted_nodes": run.overcommitted_nodes,
            "gpu_pods_off_advisors_best": run.off_best,
            "dropped": run.curves.dropped,
        }
        if run.plain is not None:
            seeds[str(seed)]["outage"] = _outage_json(run)
    section = {"profile": profile.describe(), "nodes_sampled": next(iter(runs.values())).sampled if runs else None}
    if outage is not None:
        section["outage"] = outage.text
    return section | {"seeds": seeds}


def _spread(label: str, values: list[int]) -> str:
    return f"{label}: {sum(values) / len(values):.1f} per run ({min(values)}–{max(values)})"


def _mean(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{sum(known) / len(known):.2f}" if known else "—"


def _outage_lines(outage: Outage, runs: list[KubeRun]) -> list[str]:
    windows = sorted({(r.window.start + 1, r.window.stop, r.pods) for r in runs})
    where = ", ".join(f"pods {first}–{last} of {pods}" for first, last, pods in windows)
    plain = [r.plain for r in runs if r.plain is not None]
    return [
        f"outage {outage.text}: the advisor away while {where} arrive",
        _spread("pods that waited for the advisor, scheduled once it was back", [r.waited for r in runs]),
        _spread("pods kube-scheduler bound alone while the advisor was away", [r.blind for r in runs]),
        _spread("of them GPU pods", [r.blind_gpu for r in runs]),
        _spread("without the outage: nodes over-committed", [p.overcommitted_nodes for p in plain]),
        f"unallocated GPU % at 100 % arrived: {_mean([r.unallocated for r in runs])} with the outage,"
        f" {_mean([p.unallocated for p in plain])} without (mean over runs)",
    ]


def format_kube_counts(profile: KubeSchedulerProfile, runs: dict[int, KubeRun], outage: Outage | None = None) -> str:
    """Lines under the tables: the profile, the sampling, and per run (mean, range over seeds) what
    kube-scheduler placed without the advisor; with an outage, what it did while the advisor was away."""
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
        lines.append(_spread(label, values))
    if outage is not None:
        lines += _outage_lines(outage, list(runs.values()))
    return "\n".join(lines)
