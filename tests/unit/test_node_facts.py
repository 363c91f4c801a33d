"""A node's state built from facts read before (a live model rebuilding a node for a pod) is the state
built by reading the Node object inline: the simulated cluster's seven machine types with their pods,
and Nodes whose share offer, quantities or agent notes cannot be read."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extender.cluster.bound_pods import read_bound_pod
from extender.cluster.node_facts import node_facts
from extender.cluster.state import MachineTypes, node_state
from extender.sources.snapshot import simulated_cluster

SIMULATED = simulated_cluster(now=1_800_000_000.0)


def _bound(name: str) -> list[Any]:
    found = (read_bound_pod(p).found for p in SIMULATED.pods)
    return [pod for where, pod in (f for f in found if f) if where == name]


def _changed(how: str) -> dict[str, Any]:
    node = copy.deepcopy(SIMULATED.nodes[0])
    if how == "Alibaba sharing":
        node["status"]["capacity"]["alibabacloud.com/gpu-count"] = "8"
    elif how == "unreadable share offer":
        node["status"]["capacity"]["aliyun.com/gpu-mem"] = "16"  # memory without a GPU count
    elif how == "unreadable quantity":
        node["status"]["allocatable"]["nvidia.com/gpu"] = "eight"
    else:
        node["metadata"].setdefault("annotations", {})["gpu-advisor.io/topology"] = "{not json"
    return node


HOW = ("Alibaba sharing", "unreadable share offer", "unreadable quantity", "unreadable topology")
CASES = [(n["metadata"]["name"], n) for n in SIMULATED.nodes] + [(how, _changed(how)) for how in HOW]


@pytest.mark.parametrize(("label", "node"), CASES, ids=[label for label, _ in CASES])
def test_a_state_from_facts_read_before_is_the_state_read_inline(label: str, node: dict[str, Any]) -> None:
    machines = MachineTypes()
    pods = _bound(node["metadata"]["name"])
    assert node_state(node, pods, machines, node_facts(node, machines)) == node_state(node, pods, machines)
