"""A multi-node job's pods land in one NVLink clique, and a group no clique can hold waits with the reason."""

from __future__ import annotations

from extender.cluster.cliques import clique_of
from extender.model.pods import pod_request
from extender.scoring import ScoringPolicy, judge_all
from tests.rack.cluster import NOW, rack_and_hgx, schedule, worker


def test_two_jobsets_of_eight_four_gpu_workers_each_land_in_the_rack_and_the_third_waits() -> None:
    # 18 trays × 4 GPUs: 8 workers × 4 GPUs take 8 trays, so two groups use 16 trays and leave 2.
    snap = rack_and_hgx()
    for jobset in ("train-a", "train-b"):
        placed = [schedule(snap, worker(jobset, i))[0] for i in range(8)]
        assert all(node and node.startswith("rack0-tray") for node in placed), placed
        assert len(set(placed)) == 8  # one worker per tray: each takes all 4 GPUs of its tray

    node, verdicts = schedule(snap, worker("train-c", 0))
    assert node is None
    reasons = {v.node: v.reason for v in verdicts}
    assert reasons["hgx-a"] == "needs 8 pods in one clique; largest clique with room holds 2"
    assert reasons["rack0-tray-18"] == "needs 8 pods in one clique; largest clique with room holds 2"
    assert not any(v.unresolvable for v in verdicts)  # pods ending elsewhere may free the rack


def test_later_workers_follow_their_group_into_its_clique_and_say_so() -> None:
    snap = rack_and_hgx(racks=(("aaaa.1", 9), ("bbbb.2", 9)))
    for i in range(3):
        schedule(snap, worker("train", i))
    state = snap.cluster("test")
    homes = {clique_of(n) for n in state.nodes() for p in n.pods}
    assert homes == {"aaaa.1"}  # the tightest clique that holds all 8 (both hold 9 workers: first by name)

    node, verdicts = schedule(snap, worker("train", 3))
    by_node = {v.node: v for v in verdicts}
    assert node is not None and node.startswith("rack0-tray")
    assert by_node[node].reason.endswith("; 3 of 8 pods of JobSet train already in clique aaaa.1")
    assert not by_node["rack1-tray-01"].fits
    outside = by_node["rack1-tray-01"].reason
    assert outside == "3 of 8 pods of JobSet train already in clique aaaa.1; this node is in clique bbbb.2"
    assert by_node["hgx-a"].reason.endswith("this node is in no NVLink clique")


def test_the_first_worker_goes_to_the_tightest_clique_that_holds_the_whole_group() -> None:
    # Clique aaaa has 18 trays, bbbb has 8: a group of 8 fits both; bbbb keeps aaaa whole for a bigger job.
    snap = rack_and_hgx(racks=(("aaaa.1", 18), ("bbbb.2", 8)))
    node, verdicts = schedule(snap, worker("train", 0))
    assert node is not None and node.startswith("rack1-tray")
    assert "clique bbbb.2 has room for all 8" in {v.node: v for v in verdicts}[node].reason


def test_a_group_without_the_nvlink_knob_is_steered_into_the_clique_but_may_run_elsewhere() -> None:
    snap = rack_and_hgx()
    node, verdicts = schedule(snap, worker("infer", 0, nvlink=False))
    assert node is not None and node.startswith("rack0-tray")
    hgx = {v.node: v for v in verdicts}["hgx-a"]
    assert hgx.fits and hgx.score < max(v.score for v in verdicts)
    assert hgx.breakdown["clique"] == 0.0


def test_a_pod_of_no_group_is_judged_as_before() -> None:
    lone = worker("x", 0)
    lone["metadata"]["labels"] = {}
    snap = rack_and_hgx()
    node, verdicts = schedule(snap, lone)
    assert node is not None
    assert all("clique" not in v.breakdown for v in verdicts)


def test_a_node_the_model_does_not_know_yet_still_passes_unjudged() -> None:
    snap = rack_and_hgx()
    state = snap.cluster("test")
    names = [*sorted(state.nodes_by_name()), "joined-a-moment-ago"]
    verdicts = judge_all(pod_request(worker("train", 0)), names, state.nodes_by_name(), None, ScoringPolicy(), NOW)
    unknown = verdicts[-1]
    assert unknown.fits and unknown.reason.startswith("unknown to gpu-advisor")
