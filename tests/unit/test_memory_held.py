"""Memory held is not availability: a set holding a GPU free by allocation whose VRAM something holds
is refused (the pod's memory does not fit what is left), steered around (ideal placement) or ranked
below every set that holds none (NVIDIA's device plugin, which the advisor cannot steer)."""

from __future__ import annotations

from typing import Any

import pytest

from extender.model.needs import guess_model
from extender.model.pods import PodRequest
from extender.model.readings import GpuReading, TelemetryBoard
from extender.scoring import ScoringPolicy, Verdict, VerdictMemo, judge_all
from extender.scoring.held import HELD, UNSTEERED
from extender.scoring.shape import AVOIDING
from extender.sources.snapshot import parse_snapshot

NOW = 1_796_000_000.0
H100_MIB = 81559
HELD_MIB = 62464  # 61 GiB held at SM 0% on a GPU no pod holds: 81559 − 62464 = 19095 MiB (19 GiB) left
IDEAL = ScoringPolicy(placement="ideal")
BEST_EFFORT = ScoringPolicy()
HELD_NOTE = "GPU 3 is idle but memory held (61 GiB, SM 0%) by something we don't know about"


def idle(total: int, gpus: int = 8) -> list[dict[str, Any]]:
    return [{"gpu": g, "sm_util": 0, "memory_used_mib": 0, "memory_total_mib": total} for g in range(gpus)]


def haunted_telemetry() -> list[dict[str, Any]]:
    found = idle(H100_MIB)
    found[3]["memory_used_mib"] = HELD_MIB
    return found


def cluster(free: list[int] | None = None) -> dict[str, Any]:
    """An H100 box whose free GPU 3 holds 61 GiB, beside an L40S box with a clean but PCIe-only pair."""
    return {
        "nodes": [
            {
                "name": "haunted",
                "machine": "hgx-h100",
                "free": free or [2, 3, 4, 5, 6, 7],
                "telemetry": haunted_telemetry(),
            },
            {"name": "pcie", "machine": "l40s-pcie", "free": [0, 1, 4, 6], "telemetry": idle(46068)},
        ]
    }


def judged(
    request: PodRequest, policy: ScoringPolicy = BEST_EFFORT, doc: dict[str, Any] | None = None
) -> dict[str, Verdict]:
    snap = parse_snapshot(doc or cluster(), now=NOW)
    state, board = snap.cluster("t"), snap.telemetry(policy.telemetry_max_age_s)
    names = [n.name for n in state.nodes()]
    return {v.node: v for v in judge_all(request, names, state.nodes_by_name(), board, policy, NOW)}


def test_a_set_holding_a_memory_held_gpu_ranks_below_a_worse_set_that_holds_none() -> None:
    v = judged(PodRequest(gpus=2))
    haunted, pcie = v["haunted"], v["pcie"]
    assert haunted.gpus == (2, 3), "NVIDIA's allocator hands out 2-3 and keeps the quad 4-7 whole"
    # haunted: set 1, fragmentation 1 (leaves the quad 4-7), numa 1, packing 4/8 = 0.5,
    # headroom = mean(GPU 2: 1, GPU 3: 1 − 62464/81559 = 0.234) = 0.617
    #   = .5 + .2 + .15·0.617 + .05 + .1·0.5 = 0.893
    # pcie: set ½·20/20 + ½·0 = 0.5, fragmentation 0.5, headroom 1, numa 1, packing 6/8
    #   = .25 + .1 + .15 + .05 + .075 = 0.625
    assert haunted.rank[1] == pytest.approx(0.5 + 0.2 + 0.15 * (1 + 1 - HELD_MIB / H100_MIB) / 2 + 0.05 + 0.05)
    assert pcie.rank[1] == pytest.approx(0.625)
    # … and yet ranks below: HELD comes off its stranding level (the neutral 50 on both)
    assert haunted.rank == (50 - HELD, haunted.rank[1]) and pcie.rank == (50, pcie.rank[1])
    # On the wire pcie keeps its 6 (round 6.25) as the best; haunted's 9 (round 8.93) drops to 5.
    assert (pcie.score, haunted.score) == (6, 5)
    assert haunted.fits and haunted.held == (3,)
    assert haunted.reason.endswith(
        f"{HELD_NOTE}; ranked below every node whose set holds no memory-held GPU ({UNSTEERED})"
    )


@pytest.mark.parametrize(
    ("declared_gib", "fits"),
    [
        (16, True),  # 16 GiB ≤ the 19 GiB GPU 3 has left: it fits, ranked below
        (19, False),  # 19 GiB = 19456 MiB > 19095 MiB left
        (40, False),
    ],
)
def test_a_pod_declaring_more_vram_than_the_held_gpu_has_left_is_refused_with_the_reason(
    declared_gib: int, fits: bool
) -> None:
    v = judged(PodRequest(gpus=2, gpu_memory_mib=declared_gib * 1024))["haunted"]
    assert v.fits is fits and not v.unresolvable  # the memory may be freed: not for good
    if not fits:
        assert v.reason == (f"set 2-3: {HELD_NOTE}, 19 GiB left; pod declares {declared_gib} GiB per GPU ({UNSTEERED})")
        assert v.held == (3,) and v.gpus is None


def test_a_model_whose_weights_do_not_fit_what_the_held_gpu_has_left_is_refused() -> None:
    # Llama-2-70B in fp16 over 2 GPUs (tensor parallel 2): 140 GB / 2 = 70 GB of weights per GPU,
    # room on an 80 GB H100 but not in the 19 GiB GPU 3 has left.
    model = guess_model([{"args": ["--model=meta-llama/Llama-2-70b-hf", "--tensor-parallel-size=2"]}])
    assert model is not None
    v = judged(PodRequest(gpus=2, model=model))["haunted"]
    assert not v.fits and v.reason.startswith(f"set 2-3: {HELD_NOTE}, 19 GiB left; Llama-2-70b")
    assert "weights ≈ 70 GB/GPU" in v.reason


def test_under_the_ideal_placement_the_set_is_steered_around_the_held_gpu() -> None:
    v = judged(PodRequest(gpus=2), IDEAL)["haunted"]
    assert v.gpus is not None and 3 not in v.gpus and len(v.gpus) == 2
    assert v.rank[0] == 50, "a clean set: nothing taken off its level"
    assert v.held == (3,), "forgotten when GPU 3's readings move"
    assert v.reason.endswith(f"live headroom 100%; steered around memory-held GPU 3: {HELD_NOTE}")
    # A pod that declares more than GPU 3 has left goes on the steered set too, rather than refused.
    assert judged(PodRequest(gpus=2, gpu_memory_mib=40 * 1024), IDEAL)["haunted"].fits


def test_under_the_ideal_placement_a_node_with_no_set_avoiding_it_ranks_below_and_says_why() -> None:
    v = judged(PodRequest(gpus=2), IDEAL, cluster(free=[2, 3]))["haunted"]
    assert v.gpus == (2, 3) and v.rank[0] == 50 - HELD
    assert v.reason.endswith(
        "ranked below every node whose set holds no memory-held GPU (no 2 free GPUs here avoid it)"
    )


def reading(used_mib: float, at: float) -> GpuReading:
    return GpuReading(0.0, used_mib, H100_MIB - used_mib, at=at)


@pytest.mark.parametrize(
    ("request_", "policy", "before"),
    [
        (PodRequest(gpus=2), BEST_EFFORT, "ranked below"),
        (PodRequest(gpus=2, gpu_memory_mib=40 * 1024), BEST_EFFORT, "refused"),
        (PodRequest(gpus=2), IDEAL, "steered"),
    ],
)
def test_a_remembered_verdict_is_forgotten_when_the_held_gpu_frees_its_memory(
    request_: PodRequest, policy: ScoringPolicy, before: str
) -> None:
    snap = parse_snapshot({"nodes": [{"name": "haunted", "machine": "hgx-h100", "free": [2, 3, 4, 5, 6, 7]}]}, NOW)
    state, memo, board = snap.cluster("t"), VerdictMemo(), TelemetryBoard(60)
    board.replace({("haunted", f"#{g}"): reading(HELD_MIB if g == 3 else 0, NOW) for g in range(8)}, NOW)
    memo.watch(board, policy, state.nodes_by_name, lambda: NOW + 1)

    def verdict() -> Verdict:
        return judge_all(request_, ["haunted"], state.nodes_by_name(), board, policy, NOW + 1, memo=memo)[0]

    first = verdict()
    assert verdict() is first, "remembered while nothing moves"
    assert {"ranked below": first.fits and first.rank[0] < 0, "refused": not first.fits}.get(before, True)
    assert before != "steered" or (first.gpus is not None and 3 not in first.gpus)
    board.replace({("haunted", f"#{g}"): reading(0, NOW + 1) for g in range(8)}, NOW + 1)  # GPU 3 freed
    second = verdict()
    assert second.fits and second.rank[0] == 50 and second.held == ()
    assert second.gpus == (2, 3) and second.reason.endswith("live headroom 100%")


def test_plans_steered_around_held_gpus_are_dropped_when_the_node_s_readings_move() -> None:
    # Which GPUs are held comes and goes with the readings: kept, each set ever held would stay on the
    # node (a fleet where leftover processes come and go grew by megabytes over twenty refreshes).
    snap = parse_snapshot({"nodes": [{"name": "haunted", "machine": "hgx-h100", "free": [2, 3, 4, 5, 6, 7]}]}, NOW)
    state, memo, board = snap.cluster("t"), VerdictMemo(), TelemetryBoard(60)
    board.replace({("haunted", f"#{g}"): reading(HELD_MIB if g == 3 else 0, NOW) for g in range(8)}, NOW)
    memo.watch(board, IDEAL, state.nodes_by_name, lambda: NOW + 1)
    judge_all(PodRequest(gpus=2), ["haunted"], state.nodes_by_name(), board, IDEAL, NOW + 1, memo=memo)
    node = state.nodes_by_name()["haunted"]

    def steered() -> list[object]:
        return [k for k in node.memo if type(k) is tuple and k and k[0] == AVOIDING]

    assert len(steered()) == 1, "the plan without GPU 3, kept while GPU 3 is held"
    board.replace({("haunted", f"#{g}"): reading(HELD_MIB if g == 5 else 0, NOW + 1) for g in range(8)}, NOW + 1)
    assert steered() == [], "GPU 3 freed and GPU 5 held: the plan without GPU 3 is gone"


def test_a_pod_declaring_vram_does_not_get_its_vram_less_twin_s_verdict_on_a_held_set() -> None:
    snap = parse_snapshot(cluster(), now=NOW)
    state, board, memo = snap.cluster("t"), snap.telemetry(60), VerdictMemo()
    names = [n.name for n in state.nodes()]
    plain = judge_all(PodRequest(gpus=2), names, state.nodes_by_name(), board, BEST_EFFORT, NOW, memo=memo)
    assert plain[0].node == "haunted" and plain[0].fits
    # 40 GiB fits an 80 GB H100 (so the plan is the twin's), not the 19 GiB GPU 3 has left
    declared = PodRequest(gpus=2, gpu_memory_mib=40 * 1024)
    found = judge_all(declared, names, state.nodes_by_name(), board, BEST_EFFORT, NOW, memo=memo)
    assert found[0].node == "haunted" and not found[0].fits and "19 GiB left" in found[0].reason
