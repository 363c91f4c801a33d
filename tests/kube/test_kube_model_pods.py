"""Each node of the watched model is rebuilt from exactly the pods bound to it, whatever order bindings,
moves, deletions and re-lists come in (the model keeps them by node, so an event rebuilds its node from
that node's pods, not from a pass over every bound pod)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from extender.cluster.state import ClusterState
from extender.sources.invalid import InvalidObjects
from extender.sources.kube_model import KubeModel
from tests.fakes.apiserver import node, pod

NODES = [f"n{i}" for i in range(5)]


def _pod(i: int, where: str) -> dict[str, Any]:
    obj = pod(f"p{i}", where, 1)
    obj["metadata"]["uid"] = f"uid-{i}"
    return obj


def _held(model: KubeModel) -> dict[str, set[str]]:
    return {name: {p.key for p in state.pods} for name in NODES if (state := model.state.node(name)) is not None}


@pytest.mark.parametrize("seed", range(12))
def test_every_node_holds_exactly_its_bound_pods(seed: int) -> None:
    rnd = random.Random(seed)
    model = KubeModel(ClusterState("kube"), InvalidObjects())
    model.replace("nodes", [node(name, gpus=8) for name in NODES])
    where: dict[int, str] = {i: NODES[i % 5] for i in range(4)}
    model.replace("pods", [_pod(i, n) for i, n in where.items()])
    for _ in range(80):
        i = rnd.randrange(12)
        roll = rnd.random()
        if roll < 0.6:  # bound, or moved (a pod deleted and made again under the same uid)
            where[i] = rnd.choice(NODES)
            model.set_pod("MODIFIED", _pod(i, where[i]))
        elif roll < 0.9 and i in where:
            model.set_pod("DELETED", _pod(i, where.pop(i)))
        else:  # a re-list: the model starts again from what the API server holds
            model.replace("pods", [_pod(j, n) for j, n in where.items()])
        expected = {name: {f"ml/p{j}" for j, n in where.items() if n == name} for name in NODES}
        assert _held(model) == expected


def test_a_node_is_read_once_per_node_object_and_anew_when_the_watch_changes_it(monkeypatch: Any) -> None:
    from extender.cluster.node_facts import node_facts

    reads: list[str] = []

    def counted(obj: Any, machines: Any) -> Any:
        reads.append(obj["metadata"]["name"])
        return node_facts(obj, machines)

    monkeypatch.setattr("extender.sources.kube_model.node_facts", counted)
    model = KubeModel(ClusterState("kube"), InvalidObjects())
    model.replace("nodes", [node("n0", gpus=8)])
    for i in range(3):  # three bindings: three rebuilds of n0 from the same Node object
        model.set_pod("MODIFIED", _pod(i, "n0"))
    assert reads == ["n0"]
    relabelled = node("n0", gpus=4)
    relabelled["metadata"]["resourceVersion"] = "9"
    model.set_node("MODIFIED", relabelled)  # a new object: its facts read again, and they count
    assert reads == ["n0", "n0"]
    state = model.state.node("n0")
    assert state is not None and state.allocatable["nvidia.com/gpu"] == 4 and len(state.pods) == 3
