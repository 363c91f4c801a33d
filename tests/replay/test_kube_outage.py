"""The advisor away in the kube-scheduler replay: ``ignorable`` and ``bindVerb`` parsed, ``--outage``
windows, and what kube-scheduler does with the pods that arrive meanwhile."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from extender.advice.replay.kube_profile import KubeSchedulerProfile, parse_profile
from extender.advice.replay.kube_scheduler import kube_replay
from extender.advice.replay.openb import ReplayInputError
from extender.advice.replay.outage import parse_outage
from extender.advice.replay.specs import ArrivalOrder, NodeSpec, Pod, PodShape
from gpu_advisor.cli.scheduler_config import scheduler_config

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
SHARE = PodShape(1000, 1024, 1, 600)  # 0.6 of one GPU, 1000m CPU, 1 GiB


def _profile(**entry: Any) -> KubeSchedulerProfile:
    return parse_profile(HEAD | {"extenders": [{"urlPrefix": "http://127.0.0.1:1", "weight": 5} | entry]})


@pytest.mark.parametrize(
    ("entry", "ignorable", "binds"),
    [
        ({}, False, False),  # kube-scheduler's API default: not ignorable
        ({"ignorable": False}, False, False),
        ({"ignorable": True}, True, False),
        ({"ignorable": False, "bindVerb": "bind"}, False, True),
    ],
)
def test_ignorable_and_bind_verb_are_read(entry: dict[str, Any], ignorable: bool, binds: bool) -> None:
    extender = _profile(**entry).extender
    assert extender is not None and (extender.ignorable, extender.binds) == (ignorable, binds)


def test_an_ignorable_that_is_not_a_boolean_is_refused() -> None:
    with pytest.raises(ReplayInputError, match=r"extenders\[0\].ignorable: 'true' is not true or false"):
        _profile(ignorable="true")


def test_the_profile_line_says_whether_the_extender_is_ignorable() -> None:
    assert _profile(ignorable=True).describe().endswith("extender weight 5 (all pods), ignorable")
    assert _profile().describe().endswith("extender weight 5 (all pods), not ignorable")


@pytest.mark.parametrize(
    ("text", "pods", "window"),
    [
        ("121:140", 293, range(121, 261)),  # pods 122..261 arrive while the advisor is away
        ("40%:140", 293, range(117, 257)),  # 293 × 0.40 = 117.2 → 117
        ("40%:48%", 293, range(117, 258)),  # 293 × 0.48 = 140.64 → 141
        ("41.3%:140", 293, range(121, 261)),  # 293 × 0.413 = 121.009 → 121
        ("50%:1", 3, range(2, 3)),  # 3 × 0.5 = 1.5 → 2 (half up)
        ("0:2", 2, range(0, 2)),  # the whole run
        ("0:1%", 2, range(0, 1)),  # 2 × 0.01 = 0.02 → 0, but a window holds at least one pod
    ],
)
def test_an_outage_window_in_pods_or_percentages(text: str, pods: int, window: range) -> None:
    assert parse_outage(text).window(pods) == window


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("121", "expected START:LENGTH"),
        ("a:140", "START 'a' is not a number of pods or a percentage"),
        ("1.5:140", "START '1.5' is not a number of pods"),
        ("-1:140", "START '-1' is not a number"),
        ("121:0", "LENGTH 0 is not 1 or more"),
        ("121:0%", "LENGTH 0% leaves no pod away"),
        ("101%:1", "START 101% is not between 0 and 100 %"),
        ("121:x%", "LENGTH 'x%' is not a number"),
        ("nan%:1", "START 'nan%' is not a number"),
    ],
)
def test_a_malformed_outage_is_refused(text: str, message: str) -> None:
    with pytest.raises(ReplayInputError, match=message):
        parse_outage(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("293:1", "starts after pod 293, but the run has 293 pods"),
        ("100%:1", "starts after pod 293, but the run has 293 pods"),
        ("200:100", "pods 201–300 are away, but the run has 293 pods"),
    ],
)
def test_a_window_outside_the_run_is_refused(text: str, message: str) -> None:
    with pytest.raises(ReplayInputError, match=message):
        parse_outage(text).window(293)


def _nodes() -> list[NodeSpec]:
    # one GPU each; "big" has more free CPU and memory
    return [NodeSpec("small", 8000, 16384, 1, "T4"), NodeSpec("big", 64000, 262144, 1, "T4")]


def _run(profile: KubeSchedulerProfile, outage: range, *shapes: PodShape) -> Any:
    pods = tuple(Pod(f"pod-{i}", s) for i, s in enumerate(shapes))
    return kube_replay(_nodes(), ArrivalOrder(1, pods, (0, 1)), profile, original_pods=pods, outage=outage)


def test_pods_that_wait_for_the_advisor_are_placed_right_after_the_window_before_later_arrivals() -> None:
    # Three 0.6-GPU shares; the advisor is away while the first two arrive (not ignorable: they wait).
    # Back before the third: the two waiting take one GPU each (400 milli left on each), so the third,
    # arriving later, finds no room and is dropped. Had it gone first, a waiting pod would have been.
    result = _run(_profile(filterVerb="f", prioritizeVerb="p"), range(0, 2), SHARE, SHARE, SHARE)
    assert sorted(result.run.placements[:2]) == [0, 1] and result.run.placements[2] == -1
    assert (result.waited, result.blind, result.overcommitted_pods, result.overcommitted_nodes) == (2, 0, 0, 0)
    # events: arrive 0, arrive 1 (nothing placed), place 0, place 1 (the advisor back), arrive 2 (dropped)
    assert result.run.arrived == (600, 1200, 1200, 1200, 1800)
    assert result.run.used == (0, 0, 600, 1200, 1200)


def test_with_an_ignorable_extender_kube_scheduler_binds_alone_and_overcommits() -> None:
    # The same arrivals, ignorable: kube-scheduler's default plugins pick for the first two alone.
    # Pod 0: small LeastAllocated 90 + BalancedAllocation 96 = 186, big 98 + 99 = 197 → big.
    # Pod 1: big (1000m, 1 GiB held) 97 + 98 = 195 > small 186 → big, whose one GPU has 400 milli left.
    # Pod 2 (the advisor back): the only GPU with room is small's.
    result = _run(_profile(filterVerb="f", prioritizeVerb="p", ignorable=True), range(0, 2), SHARE, SHARE, SHARE)
    assert result.run.placements == (1, 1, 0)
    assert (result.waited, result.blind, result.blind_gpu, result.without_advisor) == (0, 2, 2, 2)
    assert (result.overcommitted_pods, result.overcommitted_nodes) == (1, 1)
    assert result.run.used[-1] == 600 + 600 and result.run.arrived[-1] == 1800  # the over-committed pod: not used


@pytest.mark.parametrize(
    ("entry", "waited", "blind"),
    [
        ({"filterVerb": "f", "prioritizeVerb": "p"}, 2, 0),  # the filter call fails the cycle
        ({"filterVerb": "f", "prioritizeVerb": "p", "ignorable": True}, 0, 2),  # the extender is skipped
        ({"prioritizeVerb": "p"}, 0, 2),  # a failing prioritize call is always ignored
        ({"prioritizeVerb": "p", "bindVerb": "b"}, 2, 0),  # the bind call fails
        ({"filterVerb": "f", "bindVerb": "b", "ignorable": True}, 0, 2),  # the default binder binds instead
        ({"filterVerb": "f", "managedResources": [{"name": "nvidia.com/gpu"}]}, 0, 0),  # never asked: unaffected
    ],
)
def test_which_pods_wait_follows_kube_schedulers_handling_of_a_failing_extender(
    entry: dict[str, Any], waited: int, blind: int
) -> None:
    result = _run(_profile(**entry), range(0, 2), SHARE, SHARE)
    assert (result.waited, result.blind) == (waited, blind)


@pytest.mark.parametrize(("ignorable", "overcommitted_nodes"), [(False, 0), (True, 1)])
def test_the_printed_profile_through_an_outage(ignorable: bool, overcommitted_nodes: int) -> None:
    # The printed profile with its extender entry either way. Alone, kube-scheduler scores MostAllocated:
    # small 9 ((12 + 6) / 2) against big 0 for the first share, 18 against 0 for the second: both on small.
    document = yaml.safe_load(scheduler_config())
    document["extenders"][0]["ignorable"] = ignorable
    result = _run(parse_profile(document), range(0, 2), SHARE, SHARE)
    assert result.overcommitted_nodes == overcommitted_nodes
    assert sorted(result.run.placements) == ([0, 0] if ignorable else [0, 1])


def test_without_an_outage_nothing_waits() -> None:
    result = _run(_profile(filterVerb="f", prioritizeVerb="p"), range(0), SHARE, SHARE)
    assert (result.waited, result.blind) == (0, 0) and len(result.run.arrived) == 2
