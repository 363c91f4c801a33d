"""`gpu-advisor replay --ray`: a sweep's runs as Ray tasks, on a local Ray or on a Ray cluster's.

Ray is an optional extra (`pip install 'gpu-advisor[ray]'`), imported here only. Each trace's workset
goes into the object store once (`ray.put`) and every task receives its reference; a task runs the very
function the local processes run (`fanout.run_task`), so the figures are the same. Results come back
as they finish. A task that fails (its worker lost, or an exception) is retried by Ray, then reported
by name: a sweep with a failed run ends with an error, never with a gap in its tables.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from extender.advice.replay.fanout import Task, run_task
from extender.advice.replay.run import Workset
from extender.errors import SourceError, UsageError

__all__ = ["LOCAL", "LOOPBACK", "RETRIES", "RunsFailed", "ray_session", "run_on_ray"]

LOCAL = "local"  # `--ray` without an address: start a Ray on this machine for this command only
LOOPBACK = "127.0.0.1"
RETRIES = 2  # a failed task runs at most 1 + RETRIES times


class RunsFailed(SourceError):
    """Runs that failed on every attempt, by name."""

    def __init__(self, failures: list[tuple[str, str]], total: int) -> None:
        listed = "; ".join(f"{name} ({why})" for name, why in failures)
        super().__init__(f"{len(failures)} of {total} runs failed after {1 + RETRIES} attempts each: {listed}")
        self.failures = failures


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError("--ray needs Ray: pip install 'gpu-advisor[ray]'") from None
    return ray


@contextmanager
def ray_session(address: str = LOCAL, cpus: int | None = None) -> Iterator[None]:
    """Ray for the length of a sweep: a new local one (loopback, no dashboard, no usage report) for
    `local`, else the cluster at `address` (`auto`, `ray://head:10001`). One already started is used as is."""
    # Set before Ray is imported (it reads them then): a Ray started for a replay reports nothing
    # anywhere, and a local one takes the loopback address as its node's (Ray otherwise swaps 127.0.0.1
    # for the machine's routable address and listens on every interface).
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if address == LOCAL:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray = _import_ray()
    if ray.is_initialized():
        yield
        return
    try:
        if address == LOCAL:
            ray.init(
                address=LOCAL,
                num_cpus=cpus,
                include_dashboard=False,
                _node_ip_address=LOOPBACK,
                # Ray lowers its workers' priority (nice 15) for the sake of its own daemons; here they run
                # the work asked for, and on a busy machine they would starve where --jobs's processes do not.
                _system_config={"worker_niceness": 0},
                # its own one-machine Ray: warnings about a cluster's set-up (token auth) are noise here
                logging_level=logging.ERROR,
            )
        else:
            ray.init(address=address, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = "a local Ray" if address == LOCAL else f"the Ray cluster at {address}"
        raise SourceError(f"--ray: cannot start or reach {where} ({_first_line(exc)})") from None
    if address == LOCAL and ray.util.get_node_ip_address() != LOOPBACK:
        # Ray was imported before this session could set its environment: refuse rather than listen wider.
        ray.shutdown()
        raise SourceError("--ray: the local Ray did not take the loopback address; start it from a fresh process")
    try:
        yield
    finally:
        ray.shutdown()


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _cause(exc: BaseException) -> str:
    """What a failed task raised, in one line (Ray wraps it with its own traceback)."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {_first_line(cause)}"
    return f"{type(exc).__name__}: {_first_line(exc)}"


# Per worker process, the worksets it has unpickled, by object id: the default trace's takes 0.3 s to
# unpickle, a fifth of a fast policy's run, and a worker runs many tasks of the same trace.
_unpickled: dict[str, Workset] = {}
_KEEP = 4


def _workset(holder: list[Any]) -> Workset:
    """The workset behind the reference in `holder` (in a list, so Ray hands over the reference)."""
    ref = holder[0]
    key = ref.hex()
    if key not in _unpickled:
        import ray

        if len(_unpickled) >= _KEEP:
            _unpickled.pop(next(iter(_unpickled)))
        _unpickled[key] = ray.get(ref)
    return _unpickled[key]


def _in_worker(holder: list[Any], task: Task, run: Callable[[Workset, Task], Any]) -> Any:
    return run(_workset(holder), task)


def run_on_ray(
    worksets: Sequence[Workset],
    tasks: Sequence[Task],
    on_done: Callable[[Task, Any], None],
    retries: int = RETRIES,
    run: Callable[[Workset, Task], Any] = run_task,
) -> None:
    """Every task as a Ray task (in a `ray_session`); `on_done` hears of each result as it arrives.

    `run` is what a task calls (the tests swap in one that fails); raises `RunsFailed` naming every
    run that failed on all its attempts, after the others have finished."""
    ray = _import_ray()
    remote = ray.remote(num_cpus=1, max_retries=retries, retry_exceptions=True)(_in_worker)
    refs = [ray.put(workset) for workset in worksets]  # once per trace, shared by all its tasks
    pending = {remote.remote([refs[task.trace]], task, run): task for task in tasks}
    failures: list[tuple[str, str]] = []
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            task = pending.pop(ref)
            try:
                result = ray.get(ref)
            except ray.exceptions.RayError as exc:
                failures.append((task.name(worksets), _cause(exc)))
                continue
            on_done(task, result)
    if failures:
        raise RunsFailed(failures, len(tasks))
