"""AMD partition resources (``amd.com/cpx_nps4``): a pod runs only on a node in the mode it names."""

from __future__ import annotations

from typing import Any

import pytest

from extender.advice.dryrun import dry_run
from extender.model.amd_partitions import partition_fit, partition_mode
from extender.scoring import ScoringPolicy
from extender.sources.snapshot import parse_snapshot
from webhook.rules import advise_with_rules

NOW = 1_796_000_000.0


def node(name: str, allocatable: dict[str, str]) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "labels": {}}, "status": {"allocatable": allocatable}}


def pod(name: str, limits: dict[str, str], node_name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "rocm/vllm", "resources": {"limits": limits}}]}
    status: dict[str, Any] = {"phase": "Pending"}
    if node_name:
        spec["nodeName"] = node_name
        status = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ml"}, "spec": spec, "status": status}


# An 8x MI300X node in CPX/NPS4 (8 partitions per GPU = 64), one in SPX/NPS1 (8 whole GPUs), an H100 node.
CLUSTER = {
    "items": [
        node("mi300x-cpx", {"amd.com/cpx_nps4": "64"}),
        node("mi300x-spx", {"amd.com/spx_nps1": "8"}),
        node("h100-a", {"nvidia.com/gpu": "8"}),
        pod("held", {"amd.com/cpx_nps4": "60"}, "mi300x-cpx"),
    ]
}


def answer(limits: dict[str, str]) -> Any:
    snap = parse_snapshot(CLUSTER, now=NOW)
    nodes = {n.name: n for n in snap.cluster("test").nodes()}
    return dry_run(pod("p", limits), nodes, None, ScoringPolicy(), NOW, advise=advise_with_rules)


def test_a_pod_asking_for_cpx_partitions_is_placed_only_where_they_are_free() -> None:
    result = answer({"amd.com/cpx_nps4": "2"})
    # 64 CPX/NPS4 partitions − 60 held = 4 free ≥ 2.
    assert [r.node for r in result.ranked] == ["mi300x-cpx"]
    assert result.ranked[0].reason.startswith("CPX/NPS4: 4 of 64 partitions free")
    refused = {f.node: f for f in result.filtered}
    assert refused["mi300x-spx"].reason == "offers no CPX/NPS4 partitions (partition modes here: SPX/NPS1)"
    assert refused["mi300x-spx"].unresolvable, "a partition-mode mismatch is not fixed by waiting"
    assert refused["h100-a"].reason == "offers nvidia.com/gpu, pod asks for amd.com/gpu"


def test_more_partitions_than_are_free_waits() -> None:
    refused = {f.node: f for f in answer({"amd.com/cpx_nps4": "5"}).filtered}
    assert refused["mi300x-cpx"].reason == "4 of 64 CPX/NPS4 partitions free, pod needs 5"
    assert not refused["mi300x-cpx"].unresolvable


@pytest.mark.parametrize(
    ("resource", "mode"),
    [("amd.com/cpx_nps4", "CPX/NPS4"), ("amd.com/spx_nps1", "SPX/NPS1"), ("amd.com/gpu", None), ("amd.com/x_y", None)],
)
def test_partition_resources_are_recognised_by_name(resource: str, mode: str | None) -> None:
    assert partition_mode(resource) == mode


def test_a_pod_without_partitions_is_not_judged_by_them() -> None:
    assert partition_fit([("amd.com/gpu", 2)], {"amd.com/cpx_nps4": 64}, {}) is None


def test_admission_says_when_no_node_is_in_the_partition_mode_a_pod_names() -> None:
    findings = {f.code: f for f in answer({"amd.com/qpx_nps1": "1"}).findings}
    assert findings["amd-partition-unavailable"].message == (
        "no node offers amd.com/qpx_nps1 (offered: amd.com/cpx_nps4 (CPX/NPS4), amd.com/spx_nps1 (SPX/NPS1))"
    )
    assert "amd-partition-unavailable" not in {f.code for f in answer({"amd.com/cpx_nps4": "1"}).findings}
