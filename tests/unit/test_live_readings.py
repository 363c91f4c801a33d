"""A telemetry refresh re-judges only the nodes whose readings moved past the threshold (0.05)."""

from __future__ import annotations

from extender.model.pods import PodRequest
from extender.model.readings import GpuReading, TelemetryBoard
from extender.scoring import ScoringPolicy, VerdictMemo, judge_all
from extender.scoring.live import THRESHOLD, marks
from extender.sources.snapshot import parse_snapshot

NOW = 1_800_000_000.0
SNAP = parse_snapshot({"nodes": [{"name": "a", "machine": "dgx1-v100"}, {"name": "b", "machine": "dgx1-v100"}]}, NOW)


def board_with(sm: dict[str, float], at: float) -> dict[tuple[str, str], GpuReading]:
    # every GPU of each node at the given SM busy, 1 of its 16 GiB in use
    return {(n, f"#{g}"): GpuReading(sm[n], 1024.0, 15360.0, at=at) for n in ("a", "b") for g in range(8)}


def test_a_gpu_mark_is_its_headroom_the_smaller_of_free_sm_and_free_vram() -> None:
    board = TelemetryBoard(60)
    board.replace(board_with({"a": 40.0, "b": 70.0}, NOW), NOW)
    state = SNAP.cluster("t")
    # a: free SM 1 − 40/100 = 0.6, free VRAM 1 − 1/16 = 0.9375 → 0.6;  b: min(0.3, 0.9375) = 0.3
    assert marks(state.node("a"), board, ScoringPolicy(), NOW)[0] == (0.6,) * 8  # type: ignore[arg-type]
    assert marks(state.node("b"), board, ScoringPolicy(), NOW)[0] == (1 - 70 / 100,) * 8  # type: ignore[arg-type]
    assert THRESHOLD == 0.05


def test_a_refresh_keeps_verdicts_of_nodes_that_moved_less_than_the_threshold() -> None:
    state, policy, memo, board = SNAP.cluster("t"), ScoringPolicy(), VerdictMemo(), TelemetryBoard(60)
    pod = PodRequest(gpus=2)

    def judged() -> dict[str, object]:
        # ranked=False: the very verdicts the memo keeps (the wire lowers one of two equal nodes, a copy)
        verdicts = judge_all(pod, ["a", "b"], state.nodes_by_name(), board, policy, NOW + 5, memo=memo, ranked=False)
        return {v.node: v for v in verdicts}

    board.replace(board_with({"a": 60.0, "b": 60.0}, NOW), NOW)
    first = judged()
    # 10 s later: a moved by 0.02 of headroom (kept), b by 0.3 (re-judged)
    board.replace(board_with({"a": 62.0, "b": 90.0}, NOW + 10), NOW + 10)
    second = judged()
    assert second["a"] is first["a"] and second["b"] is not first["b"]
    assert "live headroom 10%" in second["b"].reason  # type: ignore[attr-defined]
