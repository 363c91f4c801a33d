"""Filter verdicts and scores on small clusters of real machines, with the arithmetic beside them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from extender.cluster.state import format_time
from extender.model.pods import PodRequest
from extender.scoring import PolicyError, ScoringPolicy, Verdict, evaluate
from extender.sources.policy_file import load_policy
from extender.sources.snapshot import parse_snapshot

POLICY = ScoringPolicy()
NOW = 1_796_000_000.0


def verdicts(doc: dict[str, Any], request: PodRequest, policy: ScoringPolicy = POLICY) -> dict[str, Verdict]:
    snap = parse_snapshot(doc, now=NOW)
    state, board = snap.cluster("test"), snap.telemetry(policy.telemetry_max_age_s)
    return {n.name: evaluate(request, n, n.name, board, policy, NOW) for n in state.nodes()}


def test_a_4_gpu_pod_ranks_a_free_nvlink_quad_above_4_gpus_scattered_across_sockets() -> None:
    v = verdicts(
        {
            "nodes": [
                {"name": "dgx", "machine": "dgx1-v100", "free": [4, 5, 6, 7]},
                {"name": "pcie", "machine": "l40s-pcie", "free": [0, 1, 4, 5]},
            ]
        },
        PodRequest(gpus=4),
    )
    dgx, pcie = v["dgx"], v["pcie"]
    assert dgx.gpus == (4, 5, 6, 7) and pcie.gpus == (0, 1, 4, 5)
    # dgx: quad 4-7 is the node's best (1020) and all 6 pairs ride NVLink: set = ½·1 + ½·1 = 1
    assert dgx.breakdown["set"] == 1.0 and dgx.breakdown["numa"] == 1.0
    # pcie: 0-1 and 4-5 NODE (20 each), four SYS pairs (10 each) = 80 of the best NODE quad 120,
    # no NVLink: set = ½·80/120 + ½·0 = 0.33; two sockets: numa = 0
    assert pcie.breakdown["set"] == pytest.approx(80 / 120 / 2) and pcie.breakdown["numa"] == 0.0
    # Both are exact fits (fragmentation 1, packing 8/8) with no telemetry (headroom 0.5):
    # dgx  = 10·(.5·1    + .2·1 + .15·.5 + .05·1 + .1·1) = 9.25 → 9
    # pcie = 10·(.5·.333 + .2·1 + .15·.5 + .05·0 + .1·1) = 5.42 → 5
    assert (dgx.score, pcie.score) == (9, 5)
    assert "NVLink quad 4-5-6-7" in dgx.reason and "quad 0-1-4-5" in pcie.reason


def test_a_1_gpu_pod_prefers_the_node_where_it_breaks_no_nvlink_pair() -> None:
    doc = {
        "nodes": [
            {"name": "bridged", "machine": "rtx-a6000-bridge", "free": [0, 1, 2]},
            {"name": "pcie", "machine": "l40s-pcie", "free": [0, 1, 2]},
        ]
    }
    v = verdicts(doc, PodRequest(gpus=1))
    # NVIDIA's allocator gives a 1-GPU pod the first free GPU: on "bridged" that is GPU 0, which splits
    # the NV4 pair 0-1. The best pair left drops from 0-1 (400 + NODE 20 = 420) to 1-2 (NODE 20):
    # fragmentation = 20/420. On "pcie" the best pair left, 1-2 NODE 20, is as good as before: 1.
    assert v["bridged"].gpus == (0,) and v["bridged"].breakdown["fragmentation"] == pytest.approx(20 / 420)
    assert v["pcie"].breakdown["fragmentation"] == 1.0
    # packing: bridged uses 1 of 3 GPUs after, pcie 6 of 8 (five were already busy)
    # bridged = 10·(.5 + .2·0.048 + .15·.5 + .05 + .1·1/3) = 6.68 → 7; pcie = 10·(.5 + .2 + .075 + .05 + .1·6/8) = 9.0
    assert (v["pcie"].score, v["bridged"].score) == (9, 7)
    # With the ideal placement policy the bridged node hands out GPU 2 and keeps the pair whole.
    ideal = verdicts(doc, PodRequest(gpus=1), ScoringPolicy(placement="ideal"))
    assert ideal["bridged"].gpus == (2,) and ideal["bridged"].breakdown["fragmentation"] == 1.0


def test_a_node_whose_free_gpu_holds_a_leftover_process_ranks_lower_and_says_so() -> None:
    idle = [{"gpu": g, "sm_util": 0, "memory_used_mib": 0, "memory_total_mib": 81559} for g in range(8)]
    zombie = [dict(r) for r in idle]
    zombie[2]["memory_used_mib"] = 62464  # 61 GiB held, SM 0%: nothing of the kubelet's holds GPU 2
    v = verdicts(
        {
            "nodes": [
                {"name": "clean", "machine": "hgx-h100", "free": [2, 3, 4, 5, 6, 7], "telemetry": idle},
                {"name": "haunted", "machine": "hgx-h100", "free": [2, 3, 4, 5, 6, 7], "telemetry": zombie},
            ]
        },
        PodRequest(gpus=2),
    )
    clean, haunted = v["clean"], v["haunted"]
    assert clean.gpus == haunted.gpus == (2, 3), "the device plugin would hand out GPU 2 all the same"
    # headroom: GPU 2 keeps 1 − 62464/81559 = 0.234 of its memory, GPU 3 all of it: mean 0.617
    assert haunted.breakdown["headroom"] == pytest.approx((1 - 62464 / 81559 + 1) / 2)
    assert clean.breakdown["headroom"] == 1.0
    assert haunted.score < clean.score
    assert "GPU 2 is idle but memory held (61 GiB, SM 0%) by something we don't know about" in haunted.reason


def test_interconnect_nvlink_filters_a_pcie_only_node_naming_it() -> None:
    v = verdicts(
        {
            "nodes": [
                {"name": "l40s-7", "machine": "l40s-pcie", "free": list(range(8))},
                {"name": "dgx", "machine": "dgx1-v100", "free": list(range(8))},
            ]
        },
        PodRequest(gpus=4, interconnect="nvlink"),
    )
    assert not v["l40s-7"].fits and v["l40s-7"].unresolvable
    assert v["l40s-7"].reason == "l40s-7: PCIe only, no NVLink; pod requires NVLink between 4 GPUs"
    assert v["dgx"].fits and v["dgx"].gpus == (0, 1, 2, 3)


def test_interconnect_nvlink_rejects_a_node_whose_free_gpus_are_not_nvlinked_but_could_be_later() -> None:
    v = verdicts(
        {"nodes": [{"name": "dgx", "machine": "dgx1-v100", "free": [0, 5, 6, 3]}]},
        PodRequest(gpus=4, interconnect="nvlink"),
    )
    assert not v["dgx"].fits and not v["dgx"].unresolvable
    assert v["dgx"].reason.startswith("pod requires NVLink: no 4 free GPUs joined by NVLink")


@pytest.mark.parametrize(
    ("request_", "reason", "unresolvable"),
    [
        (PodRequest(gpus=16), "has 8 GPUs in all, pod needs 16", True),
        (PodRequest(gpus=6), "4 of 8 GPUs free by its last report, pod needs 6", False),
        (PodRequest(gpus=1, gpu_memory_mib=40960), "pod declares 40 GiB per GPU, its GPUs have 16 GiB", True),
    ],
    ids=["more-than-the-node-has", "more-than-is-free", "more-memory-than-a-gpu-has"],
)
def test_rejections_say_why_and_whether_waiting_could_help(
    request_: PodRequest, reason: str, unresolvable: bool
) -> None:
    v = verdicts(
        {
            "nodes": [
                {
                    "name": "dgx",
                    "machine": "dgx1-v100",
                    "free": [4, 5, 6, 7],
                    "labels": {"nvidia.com/gpu.memory": "16384"},
                }
            ]
        },
        request_,
    )
    assert (v["dgx"].fits, v["dgx"].reason, v["dgx"].unresolvable) == (False, reason, unresolvable)


def test_a_node_without_topology_is_scored_on_counts_alone_and_says_so() -> None:
    v = verdicts({"nodes": [{"name": "bare", "gpus": 8}]}, PodRequest(gpus=2))
    assert v["bare"].fits and v["bare"].reason.startswith("topology unknown: scored on counts alone (8 of 8 free)")
    assert v["bare"].breakdown["set"] == 0.5 and v["bare"].gpus is None


def test_stale_telemetry_is_neutral_with_its_age() -> None:
    old = [
        {"gpu": g, "sm_util": 100, "memory_used_mib": 16000, "memory_total_mib": 16384, "at": format_time(NOW - 93)}
        for g in range(8)
    ]
    v = verdicts({"nodes": [{"name": "dgx", "machine": "dgx1-v100", "telemetry": old}]}, PodRequest(gpus=1))
    assert v["dgx"].breakdown["headroom"] == 0.5, "a 93 s old reading of a full GPU is no evidence either way"
    assert "telemetry stale (93 s)" in v["dgx"].reason


def test_mig_requests_need_the_profile_and_a_free_slice() -> None:
    doc = {
        "nodes": [{"name": "a100", "gpus": 0, "mig": {"1g.5gb": 7}}],
        "pods": [{"name": "p", "node": "a100", "mig": {"1g.5gb": 6}}],
    }
    assert verdicts(doc, PodRequest(mig=(("1g.5gb", 1),)))["a100"].fits
    two = verdicts(doc, PodRequest(mig=(("1g.5gb", 2),)))["a100"]
    assert (two.fits, two.unresolvable, two.reason) == (False, False, "1 of 7× MIG 1g.5gb free, pod needs 2")
    other = verdicts(doc, PodRequest(mig=(("3g.20gb", 1),)))["a100"]
    assert other.unresolvable and other.reason == "offers no MIG 3g.20gb (MIG profiles here: 1g.5gb)"


def test_time_sliced_gpus_must_fit_the_declared_memory_of_their_tenants() -> None:
    doc = {
        "nodes": [
            {
                "name": "t4",
                "machine": "a10-pcie",
                "gpus": 16,
                "labels": {
                    "nvidia.com/gpu.replicas": "4",
                    "nvidia.com/gpu.sharing-strategy": "time-slicing",
                    "nvidia.com/gpu.memory": "15360",
                },
            }
        ],
        "pods": [{"name": "big", "node": "t4", "gpus": 4, "gpu_memory": "14Gi"}],
    }
    # 4 physical GPUs × 15 GiB = 60 GiB; declared 4 × 14 GiB = 56 GiB; 56 + 1 × 8 GiB = 64 > 60
    v = verdicts(doc, PodRequest(gpus=1, gpu_memory_mib=8192))["t4"]
    assert not v.fits and v.reason == "time-sliced: declared VRAM 56 GiB + 8 GiB exceeds 60 GiB on 4 shared GPUs"
    assert verdicts(doc, PodRequest(gpus=1, gpu_memory_mib=2048))["t4"].fits


def test_pods_without_gpus_and_unknown_nodes_pass_unjudged() -> None:
    assert evaluate(PodRequest(), None, "x", None, POLICY, NOW).fits
    unknown = evaluate(PodRequest(gpus=1), None, "new-node", None, POLICY, NOW)
    assert unknown.fits and unknown.score == 0 and "unknown to gpu-advisor" in unknown.reason


def test_spread_prefers_the_emptier_node_where_binpack_prefers_the_fuller() -> None:
    doc = {
        "nodes": [
            {"name": "busy", "machine": "hgx-h100", "free": [4, 5, 6, 7]},
            {"name": "empty", "machine": "hgx-h100"},
        ]
    }
    binpack = verdicts(doc, PodRequest(gpus=1))
    spread = verdicts(doc, PodRequest(gpus=1), ScoringPolicy(mode="spread"))
    assert binpack["busy"].breakdown["packing"] > binpack["empty"].breakdown["packing"]
    assert spread["busy"].breakdown["packing"] < spread["empty"].breakdown["packing"]


def test_a_bad_policy_file_lists_every_bad_field(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("mode: pack-tight\nweights: {set: -1, colour: 2}\ntelemetry_max_age_s: 0\n")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    message = str(caught.value)
    for field in ("mode", "weights.set", "weights.colour", "telemetry_max_age_s"):
        assert field in message


def test_a_good_policy_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("mode: spread\nplacement: ideal\nweights: {set: 1, fragmentation: 0}\n")
    policy = load_policy(path)
    assert policy.mode == "spread" and policy.placement == "ideal" and policy.weights.set == 1


def test_the_simulated_cluster_answers_in_under_a_second_from_a_cold_start() -> None:
    from extender.sources.snapshot import simulated_cluster

    start = time.perf_counter()
    state = simulated_cluster().cluster("sim")
    assert {n.name for n in state.nodes()} >= {"dgx1-v100-a", "hgx-h100-a", "l40s-a", "a100-mig-a", "t4-ts-a"}
    assert time.perf_counter() - start < 5  # a smoke bound, not a benchmark
