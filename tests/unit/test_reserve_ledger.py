"""The reserve's ledger follows the cluster model node by node, and knows which GPU pods wait."""

from __future__ import annotations

from extender.advice.replay.advisor_policy import replay_node_object
from extender.cluster.state import ClusterState, node_state
from extender.scoring.reserve import Demand, Fleet
from extender.scoring.reserve_ledger import WAIT_S, ReserveLedger
from tests.api.test_shared_gpus import alibaba_pod, bound

WANTS = Demand(0.6, 8000, 32768, ())


def _state() -> ClusterState:
    state = ClusterState("ledger")
    state.replace_all(
        [
            node_state(replay_node_object("a", "G2", 64_000, 262_144, 2), (), state.machines),
            node_state(replay_node_object("b", "G2", 12_000, 262_144, 4), (), state.machines),
        ]
    )
    return state


def test_the_totals_follow_each_changed_node_as_a_full_count_would() -> None:
    state = _state()
    ledger = ReserveLedger(state.nodes_by_name)
    state.subscribe(ledger.changed)
    # a: 2 idle, room 2; b: 4 idle but ⌊12/8⌋ = 1 by CPU
    assert ledger.fleet(WANTS, 0.0) == Fleet(6000, 3, 0, 6000)
    pods = [bound(alibaba_pod("x", 300, gpu=0), "a")]  # 2 cores, 4 GiB: a keeps GPU 1 idle
    state.put(node_state(replay_node_object("a", "G2", 64_000, 262_144, 2), pods, state.machines))
    state.remove("b")
    assert ledger.fleet(WANTS, 0.0) == Fleet(1700, 1, 0, 2000)
    assert ReserveLedger(state.nodes_by_name).fleet(WANTS, 0.0) == Fleet(1700, 1, 0, 2000)


def test_a_pod_waits_until_a_node_passes_it_it_is_seen_bound_or_it_is_not_heard_of_for_long() -> None:
    ledger = ReserveLedger(_state().nodes_by_name)
    ledger.heard("ml/a", 400, passed=False, now=0.0)
    ledger.heard("ml/b", 810, passed=False, now=0.0)
    ledger.heard("ml/c", 300, passed=False, now=WAIT_S)
    assert ledger.fleet(WANTS, 1.0).waiting_milli == 400 + 810 + 300
    ledger.heard("ml/a", 400, passed=True, now=2.0)
    ledger.bound(["ml/b"])
    assert ledger.fleet(WANTS, 3.0).waiting_milli == 300
    assert ledger.fleet(WANTS, 2 * WAIT_S + 1).waiting_milli == 0
