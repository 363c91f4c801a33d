"""The agent reads each GPU's NVLink fabric registration from NVML and publishes the node's clique as
GFD labels it; the model reads it from the topology where no label says it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pynvml
import pytest

from extender.cluster.cliques import clique_of
from extender.cluster.state import ANNOTATION_TOPOLOGY, node_state
from extender.model.topology import GpuTopology
from extender.sources import nvml
from tests.fakes import machines
from tests.fakes.nvml import FakeMachine, fake_pynvml

CLUSTER = "4fc6b5a0-6d0b-4c7e-9a57-2c1f3e8d9b21"
DONE = pynvml.NVML_GPU_FABRIC_STATE_COMPLETED


def registered(machine: FakeMachine, fabrics: list[tuple[str, int, int] | None]) -> FakeMachine:
    return FakeMachine([replace(g, fabric=f) for g, f in zip(machine.gpus, fabrics, strict=True)], machine.pcie)


def discover(machine: FakeMachine, tmp_path: Path) -> GpuTopology:
    return nvml.discover_topology(fake_pynvml(machine), sysfs=machine.write_sysfs(tmp_path / "sys"))


def test_gpus_registered_in_one_clique_give_the_node_that_clique(tmp_path: Path) -> None:
    machine = registered(machines.hgx_h100(), [(CLUSTER, 32766, DONE)] * 8)
    topo = discover(machine, tmp_path)
    assert topo.clique == f"{CLUSTER}.32766"  # <cluster UUID>.<clique id>, as GFD writes the label
    assert GpuTopology.from_json(topo.to_json()).clique == topo.clique  # published with the topology


@pytest.mark.parametrize(
    ("why", "fabrics"),
    [
        ("no fabric (NotSupported)", [None] * 8),
        ("registration still in progress", [(CLUSTER, 7, pynvml.NVML_GPU_FABRIC_STATE_IN_PROGRESS)] * 8),
        ("one GPU not registered", [(CLUSTER, 7, DONE)] * 7 + [None]),
        ("two cliques on one node", [(CLUSTER, 7, DONE)] * 4 + [(CLUSTER, 8, DONE)] * 4),
        ("an all-zero cluster UUID", [("00000000-0000-0000-0000-000000000000", 7, DONE)] * 8),
    ],
)
def test_a_node_is_in_no_clique_unless_every_gpu_completed_registration_in_the_same_one(
    why: str, fabrics: list[tuple[str, int, int] | None], tmp_path: Path
) -> None:
    assert discover(registered(machines.hgx_h100(), fabrics), tmp_path).clique is None, why


def test_the_model_reads_the_clique_from_gfds_label_else_from_the_agents_topology(tmp_path: Path) -> None:
    topo = discover(registered(machines.hgx_h100(), [(CLUSTER, 5, DONE)] * 8), tmp_path)
    annotated = {"metadata": {"name": "n", "annotations": {ANNOTATION_TOPOLOGY: topo.to_json()}}}
    assert clique_of(node_state(annotated)) == f"{CLUSTER}.5"
    labelled = {"metadata": {"name": "n", "labels": {"nvidia.com/gpu.clique": "abc.9"}}}
    assert clique_of(node_state(labelled)) == "abc.9"
