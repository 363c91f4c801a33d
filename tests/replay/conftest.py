"""Shared helpers for the replay tests: tiny hand-made nodes and the trace folder (or a skip)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from extender.advice.replay import openb
from extender.advice.replay.nodes import NodeState
from extender.advice.replay.scorer import RunContext
from extender.advice.replay.specs import PodShape


def node(
    cpu: int, gpus: tuple[int, ...], model: str = "G2", mem: int = 1 << 20, tags: frozenset[str] = frozenset()
) -> NodeState:
    """A node state with `cpu` free milli-CPU and the given free milli per GPU."""
    return NodeState(model, cpu, mem, gpus, tags)


def pod(cpu: int, num_gpu: int = 0, milli: int = 0, spec: str = "", mem: int = 0) -> PodShape:
    """A pod request (milli per GPU)."""
    return PodShape(cpu, mem, num_gpu, milli if num_gpu else 0, spec)


@pytest.fixture(scope="session")
def traces() -> Path:
    """The shared trace folder; missing it skips, except in CI where it must be there."""
    folder = openb.traces_dir()
    if not (folder / "openb" / openb.NODE_LIST).is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"trace folder {folder} is missing (set {openb.TRACES_ENV})")
        pytest.skip(f"trace folder {folder} is missing")
    return folder


class Spread:
    """A policy for the moves' tests: the most free GPUs win, ties to the smaller rank, so 1-GPU pods land
    on different nodes and strand a GPU on each (four go a, b, a, b)."""

    name = "Spread"

    def prepare(self, context: RunContext) -> None:
        pass

    def score(self, node: NodeState, pod: PodShape) -> int:
        return node.gpu_free
