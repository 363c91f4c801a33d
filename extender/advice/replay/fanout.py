"""A sweep over one or more traces as independent tasks, an executor to spread them, and the results
put back into one `Sweep` per trace.

Every (trace, policy, seed) run is a `Task`: a module-level function (`run_one`, or `run_kube_one` for
kube-scheduler's column) applied to the trace's workset and a few arguments. The executor is the only
moving part: `run_local` hands every worker process the worksets once; the command line's Ray executor
puts each workset into Ray's object store once. Both end in `run_task`, so both give the same figures.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from extender.advice.replay.kube_profile import KubeSchedulerProfile
from extender.advice.replay.kube_run import KUBE_NO_OUTAGE, KUBE_POLICY, KubeRun, run_kube_one
from extender.advice.replay.openb import ReplayInputError
from extender.advice.replay.outage import Outage
from extender.advice.replay.policies import unknown_policies
from extender.advice.replay.run import Workset, run_one
from extender.advice.replay.sweep import Sweep

__all__ = ["Executor", "Task", "TraceRuns", "assemble", "plan", "run_local", "run_task"]


@dataclass(frozen=True, slots=True)
class Task:
    """One run: `call(worksets[trace], *args)`; `policy` and `seed` name it and key its result."""

    trace: int
    policy: str
    seed: int
    call: Callable[..., Any] = field(compare=False)
    args: tuple[Any, ...] = field(compare=False)

    @property
    def key(self) -> tuple[int, str, int]:
        return (self.trace, self.policy, self.seed)

    def name(self, worksets: Sequence[Workset]) -> str:
        """`default FGD seed 44`: how progress and failures name the run."""
        return f"{worksets[self.trace].name} {self.policy} seed {self.seed}"


# An executor runs every task once and tells `on_done` of each result as it finishes, in any order.
Executor = Callable[[Sequence[Workset], Sequence[Task], Callable[[Task, Any], None]], None]


def plan(
    worksets: Sequence[Workset],
    policies: list[str],
    seeds: list[int],
    profile: KubeSchedulerProfile | None = None,
    outage: Outage | None = None,
) -> list[Task]:
    """Every (trace, policy, seed), then kube-scheduler's run per (trace, seed) when a profile is given (with
    an outage of the advisor, that run also replays the seed without it)."""
    unknown = unknown_policies(policies)
    if unknown:
        raise ValueError(f"unknown policies {unknown}")
    for workset in worksets:
        for seed in seeds:
            order = workset.order(seed)  # a missing shipped order fails here, before any work starts
            if outage is not None:  # and so does an outage window outside it
                try:
                    outage.window(len(order.pods))
                except ReplayInputError as exc:
                    raise ReplayInputError(f"{exc} (seed {seed})") from None
    tasks = [
        Task(trace, policy, seed, run_one, (policy, seed))
        for trace in range(len(worksets))
        for policy in policies
        for seed in seeds
    ]
    if profile is not None:
        tasks += [
            Task(trace, KUBE_POLICY, seed, run_kube_one, (profile, seed, outage))
            for trace in range(len(worksets))
            for seed in seeds
        ]
    return tasks


def run_task(workset: Workset, task: Task) -> Any:
    """The one place a task runs, whichever executor carried it there."""
    return task.call(workset, *task.args)


# A worker process receives the worksets once (pickled by the pool's initializer), not once per task.
_worker_worksets: tuple[Workset, ...] = ()


def _install(worksets: tuple[Workset, ...]) -> None:
    global _worker_worksets
    _worker_worksets = worksets


def _run_in_worker(task: Task) -> Any:
    return run_task(_worker_worksets[task.trace], task)


def run_local(
    worksets: Sequence[Workset], tasks: Sequence[Task], on_done: Callable[[Task, Any], None], jobs: int = 1
) -> None:
    """The tasks on `jobs` local processes (in this process when 1); one pool for every trace."""
    if jobs <= 1 or len(tasks) <= 1:
        for task in tasks:
            on_done(task, run_task(worksets[task.trace], task))
        return
    workers = min(jobs, len(tasks))
    with ProcessPoolExecutor(max_workers=workers, initializer=_install, initargs=(tuple(worksets),)) as pool:
        futures = {pool.submit(_run_in_worker, task): task for task in tasks}
        for future in as_completed(futures):
            on_done(futures[future], future.result())


@dataclass(frozen=True, slots=True)
class TraceRuns:
    """One trace's sweep (kube-scheduler's runs as one more column), and kube-scheduler's runs by seed."""

    sweep: Sweep
    kube: dict[int, KubeRun]


def assemble(
    worksets: Sequence[Workset],
    policies: list[str],
    seeds: list[int],
    results: Mapping[tuple[int, str, int], Any],
    with_kube: bool = False,
) -> list[TraceRuns]:
    """The results (keyed by `Task.key`) as one `TraceRuns` per workset, policies and seeds as asked."""
    traces = []
    for trace, workset in enumerate(worksets):
        runs = {(policy, seed): results[(trace, policy, seed)] for policy in policies for seed in seeds}
        kube: dict[int, KubeRun] = {}
        columns = tuple(policies)
        if with_kube:
            kube = {seed: results[(trace, KUBE_POLICY, seed)] for seed in seeds}
            runs |= {(KUBE_POLICY, seed): run.curves for seed, run in kube.items()}
            columns = (*columns, KUBE_POLICY)
            if any(run.plain is not None for run in kube.values()):  # an outage: the same seeds without it
                runs |= {(KUBE_NO_OUTAGE, seed): run.plain.curves for seed, run in kube.items() if run.plain}
                columns = (*columns, KUBE_NO_OUTAGE)
        traces.append(TraceRuns(Sweep(workset.name, columns, tuple(seeds), runs), kube))
    return traces
