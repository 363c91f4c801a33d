"""An applied plan's intent: the Lease it is written as, read back, and how long it sends an owner's pods."""

from __future__ import annotations

from collections import Counter
from typing import Any

from extender.cluster.defrag_intents import (
    Intent,
    Owner,
    controller_of,
    intent_lease,
    read_intent,
    still_planned,
)
from extender.scoring.planned import prefer_planned
from extender.scoring.verdict import Verdict

WEB = Owner("ReplicaSet", "ml", "web-7d4", "0a1b2c3d-0000-4000-8000-000000000001")


def _written(lease: dict[str, Any], created: str = "2027-01-15T08:00:00Z") -> dict[str, Any]:
    """The Lease as the API server hands it back: with the creation time it stamps."""
    return {**lease, "metadata": {**lease["metadata"], "creationTimestamp": created}}


def test_the_lease_names_the_owner_and_the_planned_nodes_in_plan_order() -> None:
    lease = intent_lease("gpu-advisor", WEB, ["b", "c"], ttl_s=600)
    assert lease["metadata"]["name"] == "defrag-0a1b2c3d-0000-4000-8000-000000000001"
    assert lease["metadata"]["labels"] == {"app.kubernetes.io/component": "gpu-advisor-defrag"}
    assert lease["metadata"]["annotations"] == {
        "gpu-advisor.io/defrag-owner": "ReplicaSet ml/web-7d4",
        "gpu-advisor.io/defrag-nodes": "b,c",
    }
    assert lease["spec"]["leaseDurationSeconds"] == 600


def test_an_intent_runs_from_the_servers_creation_time_for_its_duration() -> None:
    found = read_intent(_written(intent_lease("gpu-advisor", WEB, ["b", "c"], ttl_s=600)))
    # 2027-01-15T08:00:00Z is 1,800,000,000 s since the epoch; until 600 s later
    assert found == Intent(WEB.uid, ("b", "c"), 1_800_000_000.0, 1_800_000_600.0)


def test_a_claims_lease_or_a_lease_without_a_start_is_no_intent() -> None:
    claims = {"metadata": {"name": "claims-a", "annotations": {"gpu-advisor.io/node": "a"}}, "spec": {}}
    assert read_intent(claims) is None
    assert read_intent(intent_lease("gpu-advisor", WEB, ["b"])) is None  # never written: no creationTimestamp


def test_each_planned_node_is_used_once_by_a_new_pod_and_none_after_expiry() -> None:
    intent = Intent(WEB.uid, ("b", "c", "b"), since=1000.0, until=1600.0)
    assert still_planned(intent, Counter(), now=1100.0) == ["b", "c", "b"]
    assert still_planned(intent, Counter({"b": 1}), now=1100.0) == ["c", "b"]
    assert still_planned(intent, Counter({"b": 2, "c": 1}), now=1100.0) == []
    assert still_planned(intent, Counter(), now=1600.0) == []


def test_the_owner_is_the_controller_reference_with_a_uid() -> None:
    refs = [
        {"kind": "Workload", "name": "w", "uid": "u-0"},
        {"kind": "ReplicaSet", "name": "web-7d4", "uid": WEB.uid, "controller": True},
    ]
    assert controller_of({"metadata": {"namespace": "ml", "ownerReferences": refs}}) == WEB
    assert controller_of({"metadata": {"namespace": "ml"}}) is None


def _v(node: str, score: int, fits: bool = True) -> Verdict:
    return Verdict(node=node, fits=fits, reason="", score=score, rank=(50.0, score / 10))


def test_the_planned_node_is_sent_on_top_and_the_best_one_below_it() -> None:
    # a was best (9); b planned (6) takes the top score 9, a is lowered to 8; c (5) stays below
    sent = prefer_planned([_v("a", 9), _v("b", 6), _v("c", 5)], ["b"])
    assert [(v.node, v.score) for v in sent] == [("a", 8), ("b", 9), ("c", 5)]


def test_a_planned_node_that_does_not_fit_is_passed_over_for_the_next_planned_one() -> None:
    verdicts = [_v("a", 9), _v("b", 0, fits=False), _v("c", 5)]
    sent = prefer_planned(verdicts, ["b", "c"])
    assert [(v.node, v.score, v.fits) for v in sent] == [("a", 8, True), ("b", 0, False), ("c", 9, True)]
    assert prefer_planned(verdicts, ["b", "zz"]) is verdicts  # nothing planned fits: as the advisor ranked it
