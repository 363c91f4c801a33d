"""The extender's answers over a recorded kube-scheduler session (``pace_sequence``) are the ones the
advisor gave before the per-pod work was made incremental: the same filter and prioritize bytes, call
by call, and the same node bound. Regenerate with ``UPDATE_GOLDEN=1 pytest tests/contract`` only for
a change meant to alter answers, and review the diff.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from tests.contract.pace_sequence import run

GOLDEN = Path(__file__).parents[1] / "golden"


@pytest.mark.parametrize(("nodes", "pods"), [(60, 320), (600, 200)])
def test_answers_match_the_recorded_session(nodes: int, pods: int) -> None:
    path = GOLDEN / f"pace-sequence-{nodes}.json"
    steps = run(nodes, pods)
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(json.dumps(steps, indent=0) + "\n")
    assert path.exists(), f"no golden file {path.name}: run with UPDATE_GOLDEN=1 once and review it"
    recorded = json.loads(path.read_text())
    assert len(steps) == len(recorded)
    for i, (got, want) in enumerate(zip(steps, recorded, strict=True)):
        assert got == want, f"step {i}: {got} != recorded {want}"


@pytest.mark.parametrize(("nodes", "pods"), [(60, 320), (600, 200)])
def test_passing_only_the_best_node_binds_every_pod_where_passing_every_fitting_node_did(nodes: int, pods: int) -> None:
    """``--filter-passes best`` (the default) against ``fitting`` (every fitting node, then prioritize): the
    same node bound at every step and the same pods left waiting; prioritize is asked only about pods the
    advisor does not rank (no GPU), and kube-scheduler scores nothing for the rest."""
    best, fitting = run(nodes, pods), run(nodes, pods, passes="fitting")
    assert [step[2] for step in best] == [step[2] for step in fitting]
    asked = [sum(1 for step in steps if step[1]) for steps in (best, fitting)]  # prioritize calls
    assert asked[0] < asked[1] / 4


def test_the_session_fills_nodes_and_leaves_pods_waiting() -> None:
    """The recorded session reaches what the answers must get right: nodes whose pods fill them, and
    pods no node takes (a filter passing none)."""
    steps = run(60, 320)
    assert sum(1 for s in steps if not s[2]) >= 10
    assert len({s[2] for s in steps if s[2]}) >= 30


def test_candidates_in_a_new_order_every_call_get_the_same_answers_as_kube_scheduler_reads_them() -> None:
    """kube-scheduler's parallel filter sends its candidates in a new order every call; the answers list
    them in the order the advisor keeps, and what kube-scheduler reads of them (names as a set, scores by
    host) and the node bound are those of the session sent in one order."""
    in_order = run(60, 320, as_sets=True)
    shuffled = run(60, 320, shuffle=random.Random(11), as_sets=True)
    assert sum(1 for step in shuffled if step[2]) >= 200
    for i, (got, want) in enumerate(zip(shuffled, in_order, strict=True)):
        assert got == want, f"step {i}: {got} != in one order {want}"
