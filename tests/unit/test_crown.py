"""`crown`: after `on_the_wire`, one node of the advisor's best tier keeps the top score, named by the pod."""

from __future__ import annotations

import zlib

from extender.scoring.ranking import crown
from extender.scoring.verdict import Verdict


def _v(node: str, score: int, fits: bool = True) -> Verdict:
    return Verdict(node, fits, "", score)


def test_the_tier_sorted_by_name_is_indexed_by_the_crc32_of_the_pod_name() -> None:
    verdicts = [_v("c", 9), _v("a", 9), _v("b", 9), _v("d", 7)]
    pod = "openb-pod-0042"
    # tier sorted by name: a, b, c; the chosen one is tier[crc32 % 3]
    chosen = ["a", "b", "c"][zlib.crc32(pod.encode()) % 3]
    scores = {v.node: v.score for v in crown(verdicts, pod)}
    assert scores == {"a": 8, "b": 8, "c": 8, "d": 7} | {chosen: 9}


def test_two_pods_with_different_names_can_crown_different_nodes() -> None:
    verdicts = [_v("a", 6), _v("b", 6)]
    crowned = {next(v.node for v in crown(verdicts, f"pod-{k}") if v.score == 6) for k in range(20)}
    assert crowned == {"a", "b"}


def test_a_top_of_zero_raises_the_chosen_one_to_one_instead() -> None:
    verdicts = [_v("a", 0), _v("b", 0)]
    chosen = ["a", "b"][zlib.crc32(b"p") % 2]
    assert {v.node: v.score for v in crown(verdicts, "p")} == {"a": 0, "b": 0} | {chosen: 1}


def test_failing_nodes_are_not_in_the_tier_and_a_single_best_node_changes_nothing() -> None:
    verdicts = [_v("a", 10, fits=False), _v("b", 8), _v("c", 7)]
    assert crown(verdicts, "p") is verdicts
