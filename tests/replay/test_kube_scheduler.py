"""The kube-scheduler replay: profiles from configurations, the score combination, and the loop."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from extender.advice.replay.kube_node import MIB, KubeNode, plugin_total
from extender.advice.replay.kube_profile import KubeSchedulerProfile, kube_default_profile, parse_profile
from extender.advice.replay.kube_scheduler import kube_replay
from extender.advice.replay.openb import ReplayInputError
from extender.advice.replay.specs import ArrivalOrder, NodeSpec, Pod, PodShape
from gpu_advisor.cli.scheduler_config import scheduler_config

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def test_kube_schedulers_defaults_score_with_fit_and_balanced_allocation_at_weight_one() -> None:
    profile = kube_default_profile()
    assert profile.weight("NodeResourcesFit") == 1 and profile.weight("NodeResourcesBalancedAllocation") == 1
    assert profile.weight("TaintToleration") == 3 and profile.extender is None
    assert profile.fit.strategy == "LeastAllocated" and profile.percentage_of_nodes_to_score == 0


def test_the_printed_configuration_sends_every_pod_and_outweighs_the_plugins_left() -> None:
    profile = parse_profile(yaml.safe_load(scheduler_config()))
    assert profile.extender is not None
    assert (profile.extender.weight, profile.extender.managed_resources) == (131, frozenset())
    assert profile.extender.filters and profile.extender.prioritizes
    assert profile.percentage_of_nodes_to_score == 100 and profile.fit.strategy == "MostAllocated"
    # 3 + 2 + 1 + 1 + 2 + 2 + 1 + 1 = 13 plugins' weight left, × 100 = 1300 < 131 × 10
    assert profile.weight("NodeResourcesBalancedAllocation") == 0
    assert sum(profile.score_weights.values()) * 100 < profile.extender.weight * 10


def test_the_printed_managed_configuration_manages_nvidia_gpus() -> None:
    profile = parse_profile(yaml.safe_load(scheduler_config(managed=True)))
    assert profile.extender is not None and "nvidia.com/gpu" in profile.extender.managed_resources


def test_disabling_every_score_plugin_and_a_profile_percentage() -> None:
    document = HEAD | {
        "percentageOfNodesToScore": 30,
        "profiles": [
            {"schedulerName": "a", "percentageOfNodesToScore": 100, "plugins": {"score": {"disabled": [{"name": "*"}]}}}
        ],
    }
    profile = parse_profile(document)
    assert dict(profile.score_weights) == {} and profile.percentage_of_nodes_to_score == 100


def test_a_score_point_entry_overrides_the_multipoint_weight_and_a_strategy_is_read() -> None:
    document = HEAD | {
        "profiles": [
            {
                "plugins": {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 7}]}},
                "pluginConfig": [
                    {
                        "name": "NodeResourcesFit",
                        "args": {
                            "scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 2}]}
                        },
                    }
                ],
            }
        ]
    }
    profile = parse_profile(document)
    assert profile.weight("NodeResourcesFit") == 7 and profile.fit.strategy == "MostAllocated"
    assert [(r.name, r.weight) for r in profile.fit.resources] == [("cpu", 2)]


def test_every_bad_field_is_reported_at_once() -> None:
    document = HEAD | {
        "percentageOfNodesToScore": 140,
        "extenders": [{"urlPrefix": "http://127.0.0.1:1", "weight": -1}],
        "profiles": [{"plugins": {"score": {"enabled": [{"name": "NoSuchPlugin"}]}}}],
    }
    with pytest.raises(ReplayInputError) as caught:
        parse_profile(document)
    message = str(caught.value)
    assert "percentageOfNodesToScore" in message and "extenders[0].weight" in message and "NoSuchPlugin" in message


def test_not_a_scheduler_configuration() -> None:
    with pytest.raises(ReplayInputError, match="KubeSchedulerConfiguration"):
        parse_profile({"apiVersion": "v1", "kind": "Pod"})


def test_the_plugins_total_is_each_score_times_its_weight() -> None:
    profile = KubeSchedulerProfile("p", 0, {"NodeResourcesFit": 2, "NodeResourcesBalancedAllocation": 3})
    node = KubeNode(cpu=4000, memory=16 * 1024 * MIB, cpu_requested=2000, memory_requested=0)
    # pod 1000m, 4 GiB: requested cpu 3000/4000, memory 4/16
    # LeastAllocated: cpu (4000-3000)*100/4000 = 25, memory (16-4)*100/16 = 75 -> 50; × 2 = 100
    # Balanced: fractions 0.75, 0.25 -> std 0.25 -> 75; × 3 = 225
    assert plugin_total(profile, node, 1000, 4 * 1024 * MIB) == 100 + 225


def test_a_pod_requesting_nothing_is_not_scored_by_balanced_allocation() -> None:
    profile = KubeSchedulerProfile("p", 0, {"NodeResourcesBalancedAllocation": 1})
    assert plugin_total(profile, KubeNode(cpu=4000, memory=1024 * MIB), 0, 0) == 0


def _nodes() -> list[NodeSpec]:
    # "big" has more free CPU and memory; both have one GPU
    return [NodeSpec("small", 8000, 16384, 1, "T4"), NodeSpec("big", 64000, 262144, 1, "T4")]


def _order(*shapes: PodShape) -> tuple[ArrivalOrder, tuple[Pod, ...]]:
    pods = tuple(Pod(f"pod-{i}", s) for i, s in enumerate(shapes))
    return ArrivalOrder(1, pods, (0, 1)), pods


def _config(weight: int, extra: dict[str, Any] | None = None) -> KubeSchedulerProfile:
    document = HEAD | {
        "extenders": [{"urlPrefix": "http://127.0.0.1:1", "filterVerb": "f", "prioritizeVerb": "p", "weight": weight}]
    }
    return parse_profile(document | (extra or {}))


def test_without_the_advisor_kube_scheduler_overcommits_a_gpu_it_cannot_see() -> None:
    # two pods of 0.6 GPU: kube-scheduler's LeastAllocated sends both to "big" (more free CPU/memory),
    # whose one GPU holds only the first; the second is over-committed and not counted as allocated.
    share = PodShape(1000, 1024, 1, 600)
    order, pods = _order(share, share)
    result = kube_replay(_nodes(), order, kube_default_profile(), original_pods=pods)
    assert result.run.placements == (1, 1)
    assert (result.without_advisor, result.overcommitted_pods, result.overcommitted_nodes) == (2, 1, 1)
    assert result.run.used[-1] == 600 and result.run.arrived[-1] == 1200


def test_with_the_advisor_asked_its_filter_keeps_the_second_share_off_the_full_gpu() -> None:
    share = PodShape(1000, 1024, 1, 600)
    order, pods = _order(share, share)
    result = kube_replay(_nodes(), order, _config(5), original_pods=pods)
    assert sorted(result.run.placements) == [0, 1] and result.overcommitted_pods == 0
    assert result.run.used[-1] == 1200


def test_a_managed_resources_list_the_pods_miss_leaves_them_to_kube_scheduler() -> None:
    share = PodShape(1000, 1024, 1, 600)
    order, pods = _order(share, share)
    extra = {
        "extenders": [
            {"urlPrefix": "x", "filterVerb": "f", "weight": 5, "managedResources": [{"name": "nvidia.com/gpu"}]}
        ]
    }
    result = kube_replay(_nodes(), order, _config(5, extra), original_pods=pods)
    assert result.without_advisor == 2 and result.overcommitted_pods == 1


def test_sampling_on_a_small_cluster_examines_every_node() -> None:
    order, pods = _order(PodShape(1000, 1024, 0, 0))
    assert kube_replay(_nodes(), order, kube_default_profile(), original_pods=pods).sampled == 2


@pytest.mark.parametrize(("weight", "placed", "off_best"), [(1, 1, 1), (131, 0, 0)])
def test_a_weight_that_outweighs_the_plugins_binds_where_the_advisor_ranks_best(
    weight: int, placed: int, off_best: int
) -> None:
    # One GPU pod, two one-GPU nodes the advisor finds equal: it raises "small" (CRC-32 1967516179 <
    # 3556500041 of "big") one wire point above. At weight 1 that point is worth 10, less than what
    # LeastAllocated and BalancedAllocation give "big" for its free CPU and memory; at 131 it is 1310.
    order, pods = _order(PodShape(1000, 1024, 1, 1000))
    result = kube_replay(_nodes(), order, _config(weight), original_pods=pods)
    assert result.run.placements == (placed,) and result.off_best == off_best
