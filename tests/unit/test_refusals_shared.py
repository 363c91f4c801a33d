"""A node refuses most pod shapes alike: one verdict per node and reason, handed to every shape it
refuses that way, and encoded for the wire once."""

from __future__ import annotations

from extender.cluster.state import NodeState
from extender.http.replies import ReplyFragments
from extender.model.pods import PodRequest
from extender.scoring import ScoringPolicy, judge_all
from extender.sources.snapshot import parse_snapshot

NOW = 1_800_000_000.0
AMD = "amd.com/gpu"


def nvidia_fleet() -> tuple[list[str], dict[str, NodeState]]:
    snap = parse_snapshot({"nodes": [{"name": "dgx-a", "machine": "dgx1-v100", "free": [0, 1, 2]}]}, now=NOW)
    state = snap.cluster("t")
    return [n.name for n in state.nodes()], dict(state.nodes_by_name())


def test_every_amd_size_on_an_nvidia_node_gets_the_one_refusal() -> None:
    names, nodes = nvidia_fleet()
    verdicts = [
        judge_all(PodRequest(gpus=k, resource=AMD), names, nodes, None, ScoringPolicy(), NOW)[0] for k in (1, 2, 4, 8)
    ]
    assert not verdicts[0].fits and "pod asks for amd.com/gpu" in verdicts[0].reason
    assert all(v is verdicts[0] for v in verdicts), "one object for the four sizes"


def test_refusals_for_different_reasons_stay_apart() -> None:
    names, nodes = nvidia_fleet()
    # 3 of 8 GPUs free: a 4-GPU pod and an 8-GPU pod are refused with their own counts.
    four, eight = (judge_all(PodRequest(gpus=k), names, nodes, None, ScoringPolicy(), NOW)[0] for k in (4, 8))
    assert not four.fits and not eight.fits
    assert four is not eight and four.reason != eight.reason


def test_a_shared_refusal_is_encoded_once_for_every_shape() -> None:
    names, nodes = nvidia_fleet()
    fragments = ReplyFragments()
    for k in (1, 2, 4, 8):
        request = PodRequest(gpus=k, resource=AMD)
        found = judge_all(request, names, nodes, None, ScoringPolicy(), NOW)
        assert fragments.priorities(request, found) == '[{"Host":"dgx-a","Score":0}]'
    assert fragments.encoded == 1


def test_a_share_pod_on_nodes_that_share_no_gpu_gets_one_refusal_plan_for_them_all() -> None:
    # Every whole-GPU node refuses a 500-milli share for the same reason: one plan, on every node's memo.
    from extender.model.pods import pod_request
    from extender.scoring.share_plan import plan_shared
    from extender.scoring.workload import NO_MIX

    snap = parse_snapshot(
        {"nodes": [{"name": n, "machine": "dgx1-v100", "free": [0, 1]} for n in ("dgx-a", "dgx-b")]}, now=NOW
    )
    share = pod_request(
        {
            "metadata": {"annotations": {"alibabacloud.com/gpu-milli": "500", "alibabacloud.com/gpu-count": "1"}},
            "spec": {"containers": [{"name": "c"}]},
        }
    )
    a, b = (plan_shared(node, share, ScoringPolicy(), NO_MIX) for node in snap.cluster("t").nodes())
    assert not a.fits and a.unresolvable and "offers no GPU sharing" in a.reason
    assert a is b
