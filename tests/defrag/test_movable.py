"""Which pods a plan may move: only what a controller recreates, never past a PDB or a higher priority."""

from __future__ import annotations

from typing import Any

import pytest

from extender.advice.defrag import MOVABLE, movable_pods
from tests.defrag.objects import pod


def _pdb(name: str, allowed: int, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"selector": {"matchLabels": labels}},
        "status": {"disruptionsAllowed": allowed},
    }


@pytest.mark.parametrize(
    ("the_pod", "why"),
    [
        pytest.param(pod("rs", 1, "a"), None, id="a ReplicaSet's replica may move"),
        pytest.param(pod("bare", 1, "a", owner=None), "a bare pod: no controller would recreate it", id="bare stays"),
        pytest.param(
            pod("bare-marked", 1, "a", owner=None, annotations={MOVABLE: "true"}),
            "a bare pod: no controller would recreate it",
            id="a bare pod stays even when marked movable",
        ),
        pytest.param(
            pod("sts", 1, "a", owner="StatefulSet"),
            'owned by a StatefulSet: moves only when marked gpu-advisor.io/movable: "true"',
            id="a StatefulSet's pod stays unless marked",
        ),
        pytest.param(pod("sts-ok", 1, "a", owner="StatefulSet", labels={MOVABLE: "true"}), None, id="marked by label"),
        pytest.param(
            pod("ds", 1, "a", owner="DaemonSet", annotations={MOVABLE: "true"}),
            "a DaemonSet's pod: it belongs on its node",
            id="a DaemonSet's pod stays",
        ),
        pytest.param(
            pod("no", 1, "a", annotations={MOVABLE: "false"}),
            'marked gpu-advisor.io/movable: "false"',
            id="marked false stays",
        ),
    ],
)
def test_who_may_move(the_pod: dict[str, Any], why: str | None) -> None:
    found = movable_pods([the_pod])
    key = f"ml/{the_pod['metadata']['name']}"
    assert (key in found.keys) == (why is None)
    assert found.left.get(key) == why


def test_a_pod_of_higher_priority_than_the_pending_one_stays() -> None:
    high = pod("high", 1, "a")
    high["spec"]["priority"] = 1000
    found = movable_pods([high, pod("low", 1, "a")], ceiling=100)
    assert found.keys == {"ml/low"}
    assert found.left["ml/high"] == "priority 1000 above the pending pod's 100"


def test_a_pdb_allowing_no_disruption_keeps_its_pods_and_one_allowing_one_lets_one_move() -> None:
    closed = pod("web-0", 1, "a", labels={"app": "web"})
    open_a, open_b = pod("etl-0", 1, "a", labels={"app": "etl"}), pod("etl-1", 1, "b", labels={"app": "etl"})
    found = movable_pods([closed, open_a, open_b], [_pdb("web", 0, {"app": "web"}), _pdb("etl", 1, {"app": "etl"})])
    assert found.left["ml/web-0"] == "PodDisruptionBudget ml/web allows no disruption now"
    assert found.within({}, "ml/etl-0") and found.within({}, "ml/etl-1")
    # one move of etl spends the budget's single disruption: 1 used of 1 allowed
    assert not found.within({"ml/etl": 1}, "ml/etl-1")
