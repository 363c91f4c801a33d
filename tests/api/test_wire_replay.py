"""Same answer on the wire: a slice of the openb trace placed through the HTTP extender, as kube-scheduler
calls it, lands every pod where the in-process replay of the advisor's policy puts it."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from extender.advice.replay import openb
from extender.advice.replay.advisor_policy import AdvisorPolicy, replay_node_object, replay_pod_object
from extender.advice.replay.engine import replay
from extender.advice.replay.specs import ArrivalOrder, NodeSpec
from extender.cluster.state import BoundPod, ClusterState, bound_pod, format_time, node_state
from extender.http.advisor import Advisor
from extender.scoring import ScoringPolicy
from gpu_advisor.app import create_app
from tests.replay.conftest import traces  # noqa: F401  (the fixture)


def _sample(folder: Path) -> tuple[tuple[NodeSpec, ...], ArrivalOrder]:
    """40 nodes of every GPU model (8-GPU G2s to 1-GPU A10s) and 300 pods of the typed-pod trace."""
    every = openb.load_nodes(folder / "openb" / openb.NODE_LIST)
    rng = random.Random(22)
    by_model: dict[str, list[NodeSpec]] = {}
    for spec in every:
        by_model.setdefault(f"{spec.model}/{spec.gpu_count}", []).append(spec)
    nodes = [spec for group in by_model.values() for spec in group[:3]]
    nodes += rng.sample([s for s in every if s not in nodes], 40 - len(nodes))
    every_pod = openb.load_pods(openb.pod_csv(folder, "gpuspec33"))
    multi = [p for p in every_pod if p.shape.num_gpu > 1]  # 1 % of the trace: picked on purpose
    pods = rng.sample([p for p in every_pod if p.shape.num_gpu <= 1], 285) + rng.sample(multi, 15)
    rng.shuffle(pods)
    ranks = list(range(len(nodes)))
    rng.shuffle(ranks)
    return tuple(nodes), ArrivalOrder(22, tuple(pods[:300]), tuple(ranks))


class _Scheduler:
    """kube-scheduler around the extender: NodeResourcesFit, filter, prioritize (whose top score is
    always one node's: no tie is left to kube-scheduler), then the binding goes into the cluster model."""

    def __init__(self, nodes: tuple[NodeSpec, ...]) -> None:
        self.objects = {
            s.name: replay_node_object(s.name, s.model, s.cpu_milli, s.memory_mib, s.gpu_count) for s in nodes
        }
        self.bound: dict[str, list[BoundPod]] = {name: [] for name in self.objects}
        self.state = ClusterState("wire-test")
        self.state.replace_all(node_state(obj, (), self.state.machines) for obj in self.objects.values())
        self.api = TestClient(create_app(Advisor(self.state, None, ScoringPolicy(), clock=lambda: 0.0)))

    def place(self, pod: dict[str, Any], cpu: int, memory: int) -> str | None:
        nodes = self.state.nodes_by_name()
        roomy = [n for n in self.objects if (nodes[n].cpu_free or 0) >= cpu and (nodes[n].memory_free or 0) >= memory]
        passed = self.api.post("/scheduler/filter", json={"Pod": pod, "NodeNames": roomy}).json()
        assert passed["Error"] == ""
        names: list[str] = passed["NodeNames"] or []
        if len(names) > 1:  # kube-scheduler skips prioritize for a single feasible node
            scores = {
                s["Host"]: s["Score"]
                for s in self.api.post("/scheduler/prioritize", json={"Pod": pod, "NodeNames": names}).json()
            }
            top = max(scores.values())
            names = [n for n in names if scores[n] == top]
            assert len(names) == 1, f"kube-scheduler would break a tie among {names}"
        if not names:
            return None
        # Bound as the API server records it: the node, and when (the model replays shares in bind order).
        when = format_time(1_796_000_000 + len(self.bound[names[0]]))
        scheduled = {"conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": when}]}
        found = bound_pod(pod | {"spec": {**pod["spec"], "nodeName": names[0]}, "status": scheduled})
        assert found is not None
        self.bound[names[0]].append(found[1])
        self.state.put(node_state(self.objects[names[0]], self.bound[names[0]], self.state.machines))
        return names[0]


def test_a_trace_slice_placed_through_the_http_extender_lands_exactly_where_the_replay_puts_it(traces: Path) -> None:  # noqa: F811
    nodes, order = _sample(traces)
    shapes = [p.shape for p in order.pods]
    assert sum(s.is_sharing for s in shapes) > 50 and sum(s.num_gpu > 1 for s in shapes) > 3
    assert sum(bool(s.gpu_spec) for s in shapes) > 50 and {s.model for s in nodes} >= {
        "G2",
        "T4",
        "P100",
        "V100M16",
        "A10",
    }

    in_process = replay(nodes, order, AdvisorPolicy(), original_pods=order.pods)

    scheduler = _Scheduler(nodes)
    index = {s.name: i for i, s in enumerate(nodes)}
    on_the_wire = []
    for pod in order.pods:
        obj = replay_pod_object(pod.shape, pod.name)
        placed = scheduler.place(obj, pod.shape.cpu_milli, pod.shape.memory_mib)
        on_the_wire.append(-1 if placed is None else index[placed])

    assert in_process.dropped > 10  # the slice fills the 40 nodes: later pods find no room
    assert tuple(on_the_wire) == in_process.placements


def test_the_http_scheduler_sees_the_pods_it_bound(traces: Path) -> None:  # noqa: F811
    nodes, order = _sample(traces)
    scheduler = _Scheduler(nodes)
    pod = next(p for p in order.pods if p.shape.is_sharing)
    placed = scheduler.place(replay_pod_object(pod.shape, pod.name), pod.shape.cpu_milli, pod.shape.memory_mib)
    assert placed is not None
    node = scheduler.state.node(placed)
    assert node is not None and node.shares is not None
    assert sorted(node.shares.free)[0] == 1000 - pod.shape.gpu_milli
    assert node.cpu_requested == pod.shape.cpu_milli
