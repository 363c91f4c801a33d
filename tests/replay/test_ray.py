"""`gpu-advisor replay --ray` through a real local Ray (loopback only, no dashboard, no usage report):
the same figures as `--jobs 2`, several traces in one sweep, failed tasks retried and then named.

Ray is the `ray` extra, which the test extra pulls in; without it these skip, except in CI where they fail.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from extender.advice.replay.fanout import Task, plan, run_local, run_task
from extender.advice.replay.run import Workset
from gpu_advisor.cli import main
from gpu_advisor.replay_inputs import load_worksets
from tests.replay.trace_cut import TwoCuts, write_two_cuts

POLICIES = "Random,DotProd,GpuClustering,GpuPacking,BestFit,FGD,advisor"


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray of 2 CPUs for the module, started the way `--ray` starts it."""
    if importlib.util.find_spec("ray") is None:  # not imported here: `ray_session` sets Ray's environment first
        if os.environ.get("CI") == "true":
            pytest.fail("Ray is not installed (the test extra pulls in gpu-advisor[ray])")
        pytest.skip("Ray is not installed")
    from gpu_advisor.replay_ray import LOCAL, ray_session

    with ray_session(LOCAL, cpus=2):
        yield


@pytest.fixture(scope="module")
def cuts(traces: Path, tmp_path_factory: pytest.TempPathFactory) -> TwoCuts:
    return write_two_cuts(traces, tmp_path_factory.mktemp("cuts"))


@pytest.fixture(scope="module")
def worksets(cuts: TwoCuts) -> list[Workset]:
    pods = [cuts.folder / "openb_pod_list_large.csv", cuts.folder / "openb_pod_list_small.csv"]
    return load_worksets(str(cuts.nodes), pods, cuts.orders, None)


def test_the_local_ray_is_on_the_loopback_address_only(local_ray: None) -> None:
    import ray

    # (Ray leaves these two unannotated)
    assert [node["NodeManagerAddress"] for node in ray.nodes()] == ["127.0.0.1"]  # type: ignore[no-untyped-call]
    assert ray.cluster_resources()["CPU"] == 2  # type: ignore[no-untyped-call]


def _niceness() -> int:
    return os.nice(0)


def test_the_local_rays_workers_run_at_the_priority_of_this_process(local_ray: None) -> None:
    import ray

    assert ray.get(ray.remote(_niceness).remote()) == os.nice(0)


def _replay(cuts: TwoCuts, out: Path, *how: str) -> tuple[str, dict[str, Any]]:
    args = ["replay", "--nodes", str(cuts.nodes), "--pods", str(cuts.folder), "--orders", str(cuts.orders)]
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert main([*args, "--seeds", "42,43", "--policies", POLICIES, "--json", str(out), *how]) == 0
    return stdout.getvalue(), json.loads(out.read_text())


def _without_seconds(table: str) -> list[str]:
    return [line for line in table.splitlines() if not line.endswith(" s per run")]


def test_ray_and_jobs_2_print_and_write_the_same_figures_for_every_trace_policy_and_seed(
    local_ray: None, cuts: TwoCuts, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    by_jobs, jobs_doc = _replay(cuts, tmp_path / "jobs.json", "--jobs", "2")
    by_ray, ray_doc = _replay(cuts, tmp_path / "ray.json", "--ray")
    assert ray_doc == jobs_doc  # every bin of alloc_pct, every policy, every seed, both traces
    assert [doc["trace"] for doc in ray_doc["traces"]] == ["large", "small"]
    assert _without_seconds(by_ray) == _without_seconds(by_jobs)
    # a line per finished run on stderr (not a terminal), each naming its run
    progress = [line for line in capsys.readouterr().err.splitlines() if " runs  " in line]
    assert len(progress) == 2 * 7 * 2 and progress[-1].startswith("28/28 runs")
    assert {line.split("  ")[-1] for line in progress} >= {"large FGD seed 42", "small advisor seed 43"}


def test_every_bin_of_both_curves_and_the_drops_match_run_by_run(local_ray: None, worksets: list[Workset]) -> None:
    from gpu_advisor.replay_ray import run_on_ray

    tasks = plan(worksets, POLICIES.split(","), [42, 43])
    by_jobs: dict[tuple[int, str, int], Any] = {}
    by_ray: dict[tuple[int, str, int], Any] = {}
    run_local(worksets, tasks, lambda task, result: by_jobs.__setitem__(task.key, result), jobs=2)
    run_on_ray(worksets, tasks, lambda task, result: by_ray.__setitem__(task.key, result))
    assert by_ray.keys() == by_jobs.keys() == {task.key for task in tasks}
    for key, run in by_jobs.items():
        assert (by_ray[key].alloc, by_ray[key].frag, by_ray[key].dropped) == (run.alloc, run.frag, run.dropped)


# What a task runs, swapped in below; Ray's workers import this module to find them. The attempts are
# counted in files, since each attempt may run in another worker process.
def _fails_for_fgd_43(attempts: Path, workset: Workset, task: Task) -> Any:
    if (task.policy, task.seed) == ("FGD", 43):
        (attempts / f"{len(list(attempts.iterdir()))}").touch()
        raise RuntimeError("a bad run")
    return run_task(workset, task)


def _worker_dies_once(attempts: Path, workset: Workset, task: Task) -> Any:
    marker = attempts / "died"
    if not marker.exists():
        marker.touch()
        os._exit(1)  # the worker process is lost, as a node going away loses it
    return run_task(workset, task)


def test_a_task_that_keeps_failing_is_retried_then_named_and_the_others_still_arrive(
    local_ray: None, worksets: list[Workset], tmp_path: Path
) -> None:
    from gpu_advisor.replay_ray import RETRIES, RunsFailed, run_on_ray

    small = worksets[1:]
    tasks = plan(small, ["FGD", "BestFit"], [42, 43])
    arrived: list[str] = []
    with pytest.raises(RunsFailed) as failed:
        run_on_ray(
            small, tasks, lambda task, _: arrived.append(task.name(small)), run=partial(_fails_for_fgd_43, tmp_path)
        )
    assert failed.value.failures == [("small FGD seed 43", "RuntimeError: a bad run")]
    assert str(failed.value) == (
        f"1 of 4 runs failed after {1 + RETRIES} attempts each: small FGD seed 43 (RuntimeError: a bad run)"
    )
    assert len(list(tmp_path.iterdir())) == 1 + RETRIES
    assert sorted(arrived) == ["small BestFit seed 42", "small BestFit seed 43", "small FGD seed 42"]


def test_a_lost_worker_is_retried_and_its_run_still_arrives(
    local_ray: None, worksets: list[Workset], tmp_path: Path
) -> None:
    from gpu_advisor.replay_ray import run_on_ray

    tasks = plan(worksets[1:], ["BestFit"], [42])
    arrived: dict[tuple[int, str, int], Any] = {}
    keep = arrived.__setitem__
    run_on_ray(
        worksets[1:], tasks, lambda task, result: keep(task.key, result), run=partial(_worker_dies_once, tmp_path)
    )
    assert (tmp_path / "died").exists()
    alone = run_task(worksets[1], tasks[0])
    assert arrived[tasks[0].key].alloc == alone.alloc
