"""The standing pod shapes: every whole-GPU count the fleet offers is worked out once the model is built
and kept, so a GPU count never asked before is answered from a table, not worked out node by node."""

from __future__ import annotations

import logging

import pytest

from extender.cluster.state import node_state
from extender.http.advisor import Advisor
from extender.http.replies import ReplyFragments
from extender.http.verbs import SchedulerVerbs
from extender.model.pods import PodRequest
from extender.model.readings import GpuReading, TelemetryBoard
from extender.scoring import ScoringPolicy, Verdict, VerdictMemo
from extender.scoring.memo import MEMO_TABLES
from extender.scoring.standing import standing_requests
from extender.sources.snapshot import parse_snapshot

NOW = 1_800_000_000.0
AMD, NV, LINKED = "amd.com/gpu", "nvidia.com/gpu", "nvidia.com/gpu NVLink"


def gpu_node(name: str, resource: str, gpus: int) -> object:
    return node_state({"metadata": {"name": name}, "status": {"allocatable": {resource: str(gpus)}}})


@pytest.mark.parametrize(
    ("fleet", "counts"),
    [
        # an 8-GPU NVIDIA box and a 4-GPU one: 1..8 NVIDIA GPUs, and NVLink-joined pairs, quads, octets
        (
            [("nvidia.com/gpu", 8), ("nvidia.com/gpu", 4)],
            {"nvidia.com/gpu": [1, 2, 3, 4, 5, 6, 7, 8], "nvidia.com/gpu NVLink": [2, 4, 8]},
        ),
        # a 16-GPU box: capped at 8 (a bigger pod is rare and spreads over a pod group)
        ([("nvidia.com/gpu", 16)], {"nvidia.com/gpu": [1, 2, 3, 4, 5, 6, 7, 8], "nvidia.com/gpu NVLink": [2, 4, 8]}),
        # 2 NVIDIA GPUs and 4 AMD ones: each vendor up to its own largest node; NVLink pairs only
        (
            [("nvidia.com/gpu", 2), (AMD, 4)],
            {AMD: [1, 2, 3, 4], "nvidia.com/gpu": [1, 2], "nvidia.com/gpu NVLink": [2]},
        ),
        ([], {}),  # no GPU node: nothing stands
    ],
)
def test_a_fleet_stands_a_pod_of_each_whole_gpu_count_its_nodes_hold(
    fleet: list[tuple[str, int]], counts: dict[str, list[int]]
) -> None:
    nodes = [gpu_node(f"n{i}", resource, gpus) for i, (resource, gpus) in enumerate(fleet)]
    found: dict[str, list[int]] = {}
    for request in standing_requests(nodes):  # type: ignore[arg-type]
        kind = request.resource + (" NVLink" if request.interconnect else "")
        found.setdefault(kind, []).append(request.gpus)
    assert found == counts


def test_a_pinned_table_outlives_any_number_of_other_shapes() -> None:
    memo, policy = VerdictMemo(), ScoringPolicy()
    standing = memo.shape(PodRequest(gpus=3), policy, None)
    memo.pin(standing)
    memo.table(standing, now=0.0)["a"] = Verdict("a", True, "fits", score=5)
    for k in range(MEMO_TABLES + 5):  # more shapes than the memo keeps
        memo.table(memo.shape(PodRequest(gpus=1, gpu_memory_mib=1024 + k), policy, None), now=0.0)
    assert memo.table(standing, now=0.0) == {"a": Verdict("a", True, "fits", score=5)}


SNAP = parse_snapshot(
    {"nodes": [{"name": n, "machine": "dgx1-v100", "free": [0, 1, 2, 3, 4, 5]} for n in ("a", "b")]}, NOW
)


def board_at(sm_of_a0: float) -> TelemetryBoard:
    board = TelemetryBoard(60)
    readings = {
        (n, f"#{g}"): GpuReading(sm_of_a0 if (n, g) == ("a", 0) else 20.0, 1024.0, 15360.0, at=NOW)
        for n in ("a", "b")
        for g in range(8)
    }
    board.replace(readings, NOW)
    return board


def standing_advisor() -> Advisor:
    advisor = Advisor(state=SNAP.cluster("t"), telemetry=board_at(20.0), policy=ScoringPolicy(), clock=lambda: NOW + 1)
    advisor.keep_standing()
    return advisor


def test_a_gpu_count_never_asked_is_answered_from_the_standing_table() -> None:
    advisor = standing_advisor()
    three = PodRequest(gpus=3)  # nobody asked for 3 GPUs
    assert advisor.verdicts_version(three) is not None  # already worked out for every node
    memo = advisor._verdict_memo()
    table = memo.table(memo.shape(three, advisor.policy, advisor.telemetry), NOW + 1)
    verdicts = advisor.judge(three, ["a", "b"], {}, ranked=False)
    assert [v is table[v.node] for v in verdicts] == [True, True]
    # 6 free GPUs on each node: 3 fit, 7 do not
    assert [v.fits for v in advisor.judge(PodRequest(gpus=7), ["a", "b"], {}, ranked=False)] == [False, False]


def test_a_refresh_that_moves_a_node_fills_in_its_standing_verdicts_again() -> None:
    advisor = standing_advisor()
    six = PodRequest(gpus=6)  # takes every free GPU, 0 among them
    before = {v.node: v for v in advisor.judge(six, ["a", "b"], {}, ranked=False)}
    assert "live headroom 80%" in before["a"].reason  # each GPU min(1 - 20/100, 15/16) = 0.80
    assert advisor.telemetry is not None
    advisor.telemetry.replace(board_at(95.0)._readings, NOW + 2)  # a's GPU 0 now 95 % busy
    memo = advisor._verdict_memo()
    table = memo.table(memo.shape(six, advisor.policy, advisor.telemetry), NOW + 1)
    assert table["b"] is before["b"]  # b did not move
    # a was judged again on the refreshing thread, not left for a request: (0.05 + 5 × 0.80) / 6 = 0.675
    assert "live headroom 68%" in table["a"].reason


def test_a_failure_filling_the_standing_shapes_is_logged_and_counted_never_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    advisor = Advisor(state=SNAP.cluster("t"), telemetry=None, policy=ScoringPolicy(), clock=lambda: NOW)

    def broken(nodes: object) -> list[PodRequest]:
        raise RuntimeError("boom")

    monkeypatch.setattr("extender.http.advisor.standing_requests", broken)
    with caplog.at_level(logging.ERROR):
        advisor.keep_standing()
    assert "standing pod shapes failed" in caplog.text
    assert advisor.metrics.standing_failures._value.get() == 1


def test_verdicts_encoded_ahead_are_not_encoded_again_and_read_the_same() -> None:
    verdicts = [Verdict("a", True, "fits", score=7), Verdict("b", False, "2 of 8 GPUs free")]
    ahead, plain = ReplyFragments(), ReplyFragments()
    ahead.encode_ahead(verdicts)
    encoded = ahead.encoded
    assert ahead.filter_parts(PodRequest(gpus=2), verdicts) == plain.filter_parts(PodRequest(gpus=2), verdicts)
    assert ahead.encoded == encoded == 2  # looked up, not made again


@pytest.mark.parametrize(("passes", "encoded"), [("fitting", True), ("best", False)])
def test_the_standing_tables_wire_fragments_are_worked_out_ahead_only_where_filter_passes_every_fitting_node(
    passes: str, encoded: bool
) -> None:
    # Passing the best node alone, a GPU pod's answer names one node and prioritize is not asked: every
    # node's fragments, kept ahead, would be memory for nothing.
    advisor = Advisor(state=SNAP.cluster("t"), telemetry=None, policy=ScoringPolicy(), clock=lambda: NOW)
    advisor.filter_passes = passes
    verbs = SchedulerVerbs(advisor)
    advisor.keep_standing()
    assert (verbs.fragments.encoded > 0) is encoded
