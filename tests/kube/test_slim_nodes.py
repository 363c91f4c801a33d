"""The watched model keeps one object for the parts many nodes have alike (resources, spec, the agent's
topology text), and each node's own for what differs."""

from __future__ import annotations

import copy

from extender.cluster.state import ANNOTATION_TOPOLOGY
from extender.sources.kube import slim_node
from tests.fakes.apiserver import node


def test_alike_parts_are_one_object_and_different_ones_their_own() -> None:
    a = node("a", gpus=8, annotations={ANNOTATION_TOPOLOGY: '{"version":1,"gpus":[]}' + " " * 2000})
    b = copy.deepcopy(a)
    b["metadata"]["name"] = "b"
    c = node("c", gpus=4)
    slim_a, slim_b, slim_c = slim_node(a), slim_node(b), slim_node(c)
    assert slim_a["status"] is slim_b["status"] and slim_a["spec"] is slim_b["spec"]
    assert (
        slim_a["metadata"]["annotations"][ANNOTATION_TOPOLOGY] is slim_b["metadata"]["annotations"][ANNOTATION_TOPOLOGY]
    )
    assert slim_c["status"] is not slim_a["status"] and slim_c["status"]["capacity"]["nvidia.com/gpu"] == "4"
    assert slim_b["metadata"]["name"] == "b" and slim_a["status"] == a["status"]


def test_values_equal_in_python_but_not_in_json_are_not_shared() -> None:
    on, one = node("x"), node("y")
    on["spec"] = {"unschedulable": True}
    one["spec"] = {"unschedulable": 1}
    assert slim_node(on)["spec"]["unschedulable"] is True
    assert slim_node(one)["spec"]["unschedulable"] == 1 and slim_node(one)["spec"] is not slim_node(on)["spec"]
