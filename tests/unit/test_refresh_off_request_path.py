"""A watched board's refresh is followed as it is installed, and only what it moved is re-judged;
alike nodes share their plans, and a pod shape that comes out alike gets the very same verdict."""

from __future__ import annotations

from extender.model.gpu_share import ShareRequest
from extender.model.needs import guess_model
from extender.model.pods import PodRequest
from extender.model.readings import GpuReading, TelemetryBoard
from extender.scoring import ScoringPolicy, Verdict, VerdictMemo, judge_all
from extender.scoring.alike import signature
from extender.scoring.headroom import headroom
from extender.scoring.judge import judge_node
from extender.scoring.live import Headroom, LiveReadings
from extender.scoring.memo import PlanKey, Shape
from extender.scoring.ranking import on_the_wire
from extender.scoring.workload import learned_from
from extender.sources.snapshot import parse_snapshot, simulated_cluster

NOW = 1_800_000_000.0
SNAP = parse_snapshot({"nodes": [{"name": n, "machine": "dgx1-v100", "free": [0, 1, 2, 3]} for n in ("a", "b")]}, NOW)


def readings(sm: dict[tuple[str, int], float], at: float) -> dict[tuple[str, str], GpuReading]:
    # every GPU 20 % busy unless ``sm`` says otherwise; 1 of its 16 GiB in use
    return {
        (n, f"#{g}"): GpuReading(sm.get((n, g), 20.0), 1024.0, 15360.0, at=at) for n in ("a", "b") for g in range(8)
    }


def watched() -> tuple[VerdictMemo, TelemetryBoard, ScoringPolicy, object]:
    state, policy, memo, board = SNAP.cluster("t"), ScoringPolicy(), VerdictMemo(), TelemetryBoard(60)
    board.replace(readings({}, NOW), NOW)
    memo.watch(board, policy, state.nodes_by_name, lambda: NOW + 1)
    return memo, board, policy, state


def test_a_refresh_of_a_watched_board_is_followed_before_any_request() -> None:
    memo, board, policy, _ = watched()
    board.replace(readings({("a", 0): 90.0}, NOW + 10), NOW + 10)
    live = memo.live(board, policy)
    assert live is not None and live.refreshed_at == NOW + 10
    assert memo.epoch == 2  # followed at watch, then at the refresh


def test_a_verdict_is_re_judged_only_when_a_gpu_it_reads_moved() -> None:
    memo, board, policy, state = watched()
    pod = PodRequest(gpus=1)

    def judged() -> dict[str, Verdict]:
        verdicts = judge_all(pod, ["a", "b"], state.nodes_by_name(), board, policy, NOW + 11, memo=memo)  # type: ignore[attr-defined]
        return {v.node: v for v in verdicts}

    first = judged()
    gpu_a, gpu_b = first["a"].gpus[0], first["b"].gpus[0]  # type: ignore[index]
    other_b = next(g for g in range(8) if g != gpu_b)
    # a's own GPU goes from 20 % to 90 % busy (headroom 0.8 → 0.1); on b only a GPU it does not use
    board.replace(readings({("a", gpu_a): 90.0, ("b", other_b): 90.0}, NOW + 10), NOW + 10)
    second = judged()
    assert second["b"] is first["b"]
    assert second["a"] is not first["a"] and "live headroom 10%" in second["a"].reason


def test_headroom_from_the_marks_is_the_full_look_s_value_and_note() -> None:
    state, policy, board = SNAP.cluster("t"), ScoringPolicy(), TelemetryBoard(60)
    board.replace(readings({("a", 0): 35.0, ("a", 1): 70.0, ("a", 2): 99.0}, NOW), NOW)
    live = LiveReadings(board, policy)
    live.follow(state.nodes(), NOW)
    node = state.node("a")
    assert node is not None
    for gpus in [(0,), (0, 1), (0, 1, 2), (3,)]:
        quick = live.headroom(node, gpus, NOW, lambda: (-1.0, "full look", 0.0, ()))
        full = headroom(node, gpus, board, policy, NOW)
        assert quick[:2] == full[:2] and quick[3] == full[3] == (), gpus
    # (0, 1): free SM (0.65 + 0.30) / 2 = 0.475 → "live headroom 48%"
    assert live.headroom(node, (0, 1), NOW, lambda: (-1.0, "", 0.0, ()))[1] == "live headroom 48%"


def test_a_free_gpu_holding_vram_gets_the_full_look_s_note_from_the_marks() -> None:
    state, policy, board = SNAP.cluster("t"), ScoringPolicy(), TelemetryBoard(60)
    held = readings({}, NOW)
    held[("a", "#3")] = GpuReading(5.0, 12288.0, 4096.0, at=NOW)  # free by allocation, 12 of 16 GiB in use
    board.replace(held, NOW)
    live = LiveReadings(board, policy)
    live.follow(state.nodes(), NOW)
    node = state.node("a")
    assert node is not None
    never: Headroom = (-1.0, "full look", 0.0, ())
    for gpus in [(3,), (2, 3), (3, 0, 1)]:
        quick, full = live.headroom(node, gpus, NOW, lambda: never), headroom(node, gpus, board, policy, NOW)
        assert quick[:2] == full[:2] and quick[3] == full[3] == (3,), gpus  # GPU 3 is memory-held in each
    # (2, 3): GPU 2 min(0.80, 15/16) = 0.80, GPU 3 min(0.95, 4/16) = 0.25 → (0.80 + 0.25) / 2 = 0.525
    value, note, _, marked = live.headroom(node, (2, 3), NOW, lambda: never)
    assert value == (0.8 + 0.25) / 2 and note.startswith("GPU 3 is") and "12" in note and marked == (3,)


def test_alike_nodes_share_a_plan_and_alike_shapes_share_the_verdict() -> None:
    memo, board, policy, state = watched()
    nodes = state.nodes_by_name()  # type: ignore[attr-defined]
    plain, declared = PodRequest(gpus=2), PodRequest(gpus=2, gpu_memory_mib=4096)
    # ranked=False: the very verdicts the memo keeps (the wire lowers one of two equal nodes, a copy)
    first = judge_all(plain, ["a", "b"], nodes, board, policy, NOW + 1, memo=memo, ranked=False)
    second = judge_all(declared, ["a", "b"], nodes, board, policy, NOW + 1, memo=memo, ranked=False)
    # same machine, same free set: one signature, one plan worked out for both
    assert signature(nodes["a"]) is signature(nodes["b"])
    assert len(memo.plans[memo.shape(plain, policy, board).plan_key]) == 1
    assert [v is w for v, w in zip(first, second, strict=True)] == [True, True]  # 4 GiB fits a 16 GiB GPU
    # Another VRAM figure, with a candidate the model does not know among them: that one passes unjudged.
    third = judge_all(
        PodRequest(gpus=2, gpu_memory_mib=2048),
        ["a", "ghost", "b"],
        nodes,
        board,
        policy,
        NOW + 1,
        memo=memo,
        ranked=False,
    )
    assert [third[0] is first[0], third[2] is first[1]] == [True, True]
    assert third[1].fits and "unknown to gpu-advisor" in third[1].reason


def test_sharing_work_across_alike_nodes_changes_no_verdict() -> None:
    """judge_all (plans and verdicts shared across alike nodes and pod shapes) against each node judged
    on its own, for pods of every size, with VRAM that fits, that does not, and NVLink required."""
    snap = simulated_cluster(now=NOW)
    policy, board = ScoringPolicy(), snap.telemetry(60)
    pods = [PodRequest(gpus=k, gpu_memory_mib=m) for k in (1, 2, 3, 4, 8) for m in (None, 8192, 40960)]
    pods += [PodRequest(gpus=k, interconnect="nvlink") for k in (2, 4, 8)]
    # Named models: a 7B one fits with room almost anywhere, a 70B one is tight or refused on most GPUs.
    models = [
        guess_model([{"args": [f"--model={m}"]}]) for m in ("mistralai/Mistral-7B-v0.1", "meta-llama/Llama-2-70b-hf")
    ]
    pods += [PodRequest(gpus=k, model=m) for m in models for k in (1, 4)]
    # CPU, memory and latency are not read by a whole-GPU plan: judged here as the CPU-less twin's shape.
    pods += [PodRequest(gpus=k, cpu_milli=16_000, memory_mib=65_536, latency_sensitive=True) for k in (1, 4)]
    # One memo for them all: a pod that declares VRAM also gets the verdicts its VRAM-less twin got.
    shared_state, memo = snap.cluster("shared"), VerdictMemo()
    names = [n.name for n in shared_state.nodes()]
    for pod in pods:
        own_state = snap.cluster("own")
        shared = judge_all(pod, names, shared_state.nodes_by_name(), board, policy, NOW, memo=memo)
        shape = Shape(PlanKey(pod, policy), board)
        placer = own_state.machines.placer
        own = [judge_node(n, n.name, shape, placer, NOW)[0] for n in own_state.nodes()]
        assert shared == on_the_wire(own), pod


def test_pods_that_differ_only_in_what_a_plan_does_not_read_share_one_shape() -> None:
    """A Deployment with new CPU and memory figures, a latency-sensitive twin, or the same pod under a
    newer learned mix: a whole-GPU plan reads none of it, so the verdicts are the very ones remembered."""
    memo, board, policy, state = watched()
    nodes = state.nodes_by_name()  # type: ignore[attr-defined]
    first = judge_all(PodRequest(gpus=2), ["a", "b"], nodes, board, policy, NOW + 1, memo=memo, ranked=False)
    twins = [
        PodRequest(gpus=2, cpu_milli=8000, memory_mib=32_768),
        PodRequest(gpus=2, latency_sensitive=True),
    ]
    for twin in twins:
        assert memo.shape(twin, policy, board) is memo.shape(PodRequest(gpus=2), policy, board), twin
        again = judge_all(twin, ["a", "b"], nodes, board, policy, NOW + 1, memo=memo, ranked=False)
        assert [v is w for v, w in zip(first, again, strict=True)] == [True, True], twin
    renewed = learned_from([("p", PodRequest(gpus=1, cpu_milli=4000))])
    assert memo.shape(PodRequest(gpus=2), policy, board, renewed) is memo.shape(PodRequest(gpus=2), policy, board)
    # A GPU share is judged against the mix (what it strands): its CPU and the mix stay in its shape.
    share = PodRequest(gpus=1, share=ShareRequest("alibaba", "alibabacloud.com/gpu-milli", milli=500), cpu_milli=4000)
    assert memo.shape(share, policy, board, renewed) is not memo.shape(share, policy, board)


def test_alike_nodes_refused_nvlink_each_name_themselves_from_one_placement() -> None:
    """An NVLink refusal opens with its node's name; alike nodes still share the work behind it."""
    snap = parse_snapshot({"nodes": [{"name": n, "machine": "l40s-pcie", "free": [0, 1, 4, 5]} for n in "xyz"]}, NOW)
    state, memo, policy = snap.cluster("t"), VerdictMemo(), ScoringPolicy()
    pod = PodRequest(gpus=2, interconnect="nvlink")
    verdicts = judge_all(pod, ["x", "y", "z"], state.nodes_by_name(), None, policy, NOW, memo=memo)
    assert [v.reason for v in verdicts] == [
        f"{n}: PCIe only, no NVLink; pod requires NVLink between 2 GPUs" for n in "xyz"
    ]
    assert all(v.unresolvable for v in verdicts)
    assert len(memo.plans[memo.shape(pod, policy, None).plan_key]) == 1  # one signature, one kept refusal


def test_nodes_running_the_same_different_pods_are_alike_whatever_order_the_pods_came_in() -> None:
    # A 1-GPU notebook and a 2-GPU job on each node, listed in either order: one signature, one plan.
    pods = [("notebook", 1), ("finetune", 2)]
    snap = parse_snapshot(
        {
            "nodes": [{"name": n, "machine": "dgx1-v100", "free": [3, 4, 5, 6, 7]} for n in ("a", "b")],
            "pods": [
                {"name": f"{pod}-{n}", "node": n, "gpus": k}
                for n, order in (("a", pods), ("b", pods[::-1]))
                for pod, k in order
            ],
        },
        NOW,
    )
    nodes = snap.cluster("t").nodes_by_name()
    assert signature(nodes["a"]) is not None
    assert signature(nodes["a"]) is signature(nodes["b"])
    memo, policy = VerdictMemo(), ScoringPolicy()
    judge_all(PodRequest(gpus=2), ["a", "b"], nodes, None, policy, NOW, memo=memo)
    assert len(memo.plans[memo.shape(PodRequest(gpus=2), policy, None).plan_key]) == 1
