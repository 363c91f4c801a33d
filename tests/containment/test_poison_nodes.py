"""A Node whose fields or agent annotations cannot be read is modelled conservatively and counted;
the rest of the cluster model is untouched and the watch goes on."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from extender.cluster.containment import contained_node_state
from extender.cluster.state import ANNOTATION_FREE_GPUS, ANNOTATION_TOPOLOGY, MachineTypes
from tests.containment.live import eventually, free, live_source, metric
from tests.fakes.apiserver import FakeApiServer, node, pod

INVALID = "gpu_advisor_invalid_objects"


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    with FakeApiServer() as server:
        server.put("nodes", node("good", gpus=4))
        yield server


def broken(**changes: Any) -> dict[str, Any]:
    obj: dict[str, Any] = node("bad", gpus=8)
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = obj
        for part in parents:
            target = target[part]
        target[last] = value
    return obj


@pytest.mark.parametrize(
    ("changes", "reason", "gpus"),
    [
        # A topology the agent could not have written: no wiring known, its 8 GPUs still count.
        ({"metadata__annotations": {ANNOTATION_TOPOLOGY: '{"gpus": [{"index": 1e400}]}'}}, "topology", 8),
        ({"metadata__annotations": {ANNOTATION_FREE_GPUS: '{"free": "all"}'}}, "free-gpus", 8),
        # allocatable "NaN" is not a whole count: the node offers 0 GPUs, not an error.
        ({"status__allocatable": {"nvidia.com/gpu": "NaN"}}, "resources", 0),
        # labels of the wrong shape: the node cannot be built as sent, so it is built without them.
        ({"metadata__labels": ["not", "a", "map"]}, "malformed", 8),
        ({"spec": {"taints": "everything"}}, "malformed", 8),
    ],
)
def test_a_bad_node_is_modelled_and_counted_by_list_and_by_watch(
    fake: FakeApiServer, changes: dict[str, Any], reason: str, gpus: int
) -> None:
    fake.put("nodes", broken(**changes))
    source, registry = live_source(fake)
    source.start()
    try:
        assert source.state.wait_ready(8)
        assert free(source, "bad") == gpus and free(source, "good") == 4
        assert metric(registry, INVALID, kind="Node", reason=reason) == 1
        fake.put("nodes", node("bad", gpus=8))  # fixed by watch
        eventually(lambda: metric(registry, INVALID, kind="Node", reason=reason) is None)
        fake.put("nodes", broken(**changes))  # broken again by watch
        eventually(lambda: metric(registry, INVALID, kind="Node", reason=reason) == 1)
        fake.put("pods", pod("later", "good", 3))
        eventually(lambda: free(source, "good") == 1)
    finally:
        source.stop()


def test_a_node_whose_name_is_missing_is_skipped_and_the_watch_goes_on(fake: FakeApiServer) -> None:
    source, registry = live_source(fake)
    source.start()
    try:
        assert source.state.wait_ready(8)
        with fake.lock:  # an event the fake's own put() would refuse: a Node without a name
            fake.rv += 1
            fake.events.append((fake.rv, "nodes", "ADDED", {"metadata": {"resourceVersion": str(fake.rv)}}))
            fake.lock.notify_all()
        eventually(lambda: metric(registry, INVALID, kind="Node", reason="malformed") == 1)
        fake.put("nodes", node("after", gpus=2))
        eventually(lambda: free(source, "after") == 2)
    finally:
        source.stop()


@pytest.mark.parametrize(
    ("obj", "reasons", "gpus"),
    [
        # labels a list: node_state raises; the node is built again from its name and status alone.
        (
            {"metadata": {"name": "n", "labels": ["x"]}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}},
            ["malformed"],
            8,
        ),
        # annotations a list, allocatable a string: nothing readable but the name, so no GPUs.
        (
            {"metadata": {"name": "n", "annotations": ["x"]}, "status": {"allocatable": "8"}},
            ["malformed", "resources"],
            0,
        ),
    ],
)
def test_a_node_of_the_wrong_shape_is_built_from_what_can_be_read(
    obj: dict[str, Any], reasons: list[str], gpus: int
) -> None:
    state, problems = contained_node_state(obj, (), MachineTypes())
    assert state.name == "n" and state.gpu_total == gpus
    assert [p.reason for p in problems] == reasons
