"""The cluster model owns its per-machine-type state: nodes of one type share a topology and a
placement engine; another model starts from nothing."""

from __future__ import annotations

from extender.cluster import ANNOTATION_TOPOLOGY, ClusterState, node_state
from extender.model.machines import bundled_machines
from extender.model.smi_topo import parse_topo_matrix

TOPOLOGY = parse_topo_matrix(bundled_machines()["hgx-h100"]).to_json()


def _node(name: str) -> dict[str, object]:
    return {
        "metadata": {"name": name, "annotations": {ANNOTATION_TOPOLOGY: TOPOLOGY}},
        "status": {"allocatable": {"nvidia.com/gpu": "8"}},
    }


def test_nodes_of_one_machine_type_share_one_topology_in_their_cluster_model() -> None:
    state = ClusterState("test")
    a = node_state(_node("a"), machines=state.machines)
    b = node_state(_node("b"), machines=state.machines)
    assert a.topology is not None and a.topology is b.topology
    assert state.machines.placer.wiring(a.topology) is state.machines.placer.wiring(b.topology)


def test_another_cluster_model_or_a_lone_node_keeps_its_own() -> None:
    ours, theirs = ClusterState("ours"), ClusterState("theirs")
    a = node_state(_node("a"), machines=ours.machines)
    assert node_state(_node("a"), machines=theirs.machines).topology is not a.topology
    assert node_state(_node("a")).topology is not a.topology
