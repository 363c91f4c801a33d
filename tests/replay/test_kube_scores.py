"""kube-scheduler v1.36's score formulas, node sampling and extender rules, with the arithmetic written out."""

from __future__ import annotations

from typing import Any

import pytest

from extender.advice.replay.kube_fit import ShapePoint
from extender.advice.replay.kube_scores import (
    balanced_allocation,
    extender_points,
    is_interested,
    least_allocated,
    most_allocated,
    nonzero_request,
    num_feasible_nodes_to_find,
    requested_to_capacity_ratio,
)

GIB = 1024**3


@pytest.mark.parametrize(
    ("requested", "allocatable", "weights", "expected"),
    [
        # cpu (4000-1000)*100/4000 = 75; memory (16-4)*100/16 = 75; (75+75)/2 = 75
        ([1000, 4 * GIB], [4000, 16 * GIB], [1, 1], 75),
        # cpu (4000-3000)*100/4000 = 25; memory (16-2)*100/16 = 87 (87.5 truncated); (25+87)/2 = 56
        ([3000, 2 * GIB], [4000, 16 * GIB], [1, 1], 56),
        # weights 3:1 -> (25*3 + 87*1)/4 = 162/4 = 40 (40.5 truncated)
        ([3000, 2 * GIB], [4000, 16 * GIB], [3, 1], 40),
        # requested above allocatable scores 0 for that resource: (0 + 100)/2 = 50
        ([5000, 0], [4000, 16 * GIB], [1, 1], 50),
        # a resource with allocatable 0 is left out: only cpu, 75
        ([1000, 7], [4000, 0], [1, 1], 75),
    ],
)
def test_least_allocated(requested: list[int], allocatable: list[int], weights: list[int], expected: int) -> None:
    assert least_allocated(requested, allocatable, weights) == expected


@pytest.mark.parametrize(
    ("requested", "allocatable", "weights", "expected"),
    [
        # cpu 1000*100/4000 = 25; memory 4*100/16 = 25; 25
        ([1000, 4 * GIB], [4000, 16 * GIB], [1, 1], 25),
        # cpu 3000*100/4000 = 75; memory 2*100/16 = 12 (12.5 truncated); (75+12)/2 = 43 (43.5 truncated)
        ([3000, 2 * GIB], [4000, 16 * GIB], [1, 1], 43),
        # requested above allocatable counts as allocatable: 100 and 0 -> 50
        ([5000, 0], [4000, 16 * GIB], [1, 1], 50),
    ],
)
def test_most_allocated(requested: list[int], allocatable: list[int], weights: list[int], expected: int) -> None:
    assert most_allocated(requested, allocatable, weights) == expected


_BIN_PACKING = (ShapePoint(0, 0), ShapePoint(100, 10))
_SPREADING = (ShapePoint(0, 10), ShapePoint(100, 0))


@pytest.mark.parametrize(
    ("requested", "allocatable", "weights", "shape", "expected"),
    [
        # utilization cpu 1000*100/4000 = 25 -> 0 + (100-0)*(25-0)/100 = 25; memory 50 % -> 50; round(75/2) = 38
        ([1000, 8 * GIB], [4000, 16 * GIB], [1, 1], _BIN_PACKING, 38),
        # spreading: 100 + (0-100)*25/100 = 75 and 100 - 50 = 50; round(125/2 = 62.5) = 63 (half away from zero)
        ([1000, 8 * GIB], [4000, 16 * GIB], [1, 1], _SPREADING, 63),
        # 33 %: 100 + (-100*33)/100 = 100 - 33 = 67 (the division truncates toward zero); memory 0 % -> 100
        ([1320, 0], [4000, 16 * GIB], [1, 1], _SPREADING, 84),  # round((67+100)/2 = 83.5) = 84
        # a resource scoring 0 does not enter the mean: cpu 0 % -> 0 left out; memory 50 % -> 50
        ([0, 8 * GIB], [4000, 16 * GIB], [1, 1], _BIN_PACKING, 50),
        # above capacity scores as 100 % utilization: 10*10 = 100 for cpu; memory 0 % -> left out
        ([5000, 0], [4000, 16 * GIB], [1, 1], _BIN_PACKING, 100),
        # flat below the first point: shape (50 %, 2) (100 %, 10): 20 % scores 2*10 = 20
        ([800, 0], [4000, 0], [1, 1], (ShapePoint(50, 2), ShapePoint(100, 10)), 20),
    ],
)
def test_requested_to_capacity_ratio(
    requested: list[int], allocatable: list[int], weights: list[int], shape: tuple[ShapePoint, ...], expected: int
) -> None:
    assert requested_to_capacity_ratio(requested, allocatable, weights, shape) == expected


@pytest.mark.parametrize(
    ("requested", "allocatable", "expected"),
    [
        # fractions 0.25 and 0.25: std 0 -> 100
        ([1000, 4 * GIB], [4000, 16 * GIB], 100),
        # fractions 0.75 and 0.125: std |0.75-0.125|/2 = 0.3125 -> int(68.75) = 68
        ([3000, 2 * GIB], [4000, 16 * GIB], 68),
        # a fraction above 1 is capped: 1 and 0 -> std 0.5 -> 50
        ([5000, 0], [4000, 16 * GIB], 50),
        # one resource (the other has allocatable 0): std 0 -> 100
        ([3000, 5], [4000, 0], 100),
    ],
)
def test_balanced_allocation(requested: list[int], allocatable: list[int], expected: int) -> None:
    assert balanced_allocation(requested, allocatable) == expected


def test_balanced_allocation_with_three_resources_uses_the_population_standard_deviation() -> None:
    # fractions 0.5, 0.5, 0.2: mean 0.4; variance (0.01 + 0.01 + 0.04)/3 = 0.02; std 0.1414 -> int(85.86) = 85
    assert balanced_allocation([2, 2, 2], [4, 4, 10]) == 85


@pytest.mark.parametrize(
    ("resource", "stated", "expected"),
    [("cpu", None, 100), ("memory", None, 200 * 1024 * 1024), ("cpu", 0, 0), ("memory", 5, 5), ("x/y", None, 0)],
)
def test_an_unstated_cpu_or_memory_request_counts_as_kube_schedulers_default(
    resource: str, stated: int | None, expected: int
) -> None:
    assert nonzero_request(resource, stated) == expected


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        (0, 40, 40),  # fewer than 100 nodes: all of them
        (0, 99, 99),
        (0, 100, 100),  # 50 - 100/125 = 50 % of 100 = 50, raised to the minimum 100
        (0, 1213, 497),  # 50 - 1213/125 = 50 - 9 = 41 %; 1213*41/100 = 497
        (0, 5000, 500),  # 50 - 40 = 10 %; 500
        (0, 10000, 500),  # 50 - 80 < 5 -> 5 %; 500
        (100, 1213, 1213),
        (10, 1213, 121),  # 1213*10/100 = 121
        (5, 1213, 100),  # 60, raised to 100
    ],
)
def test_num_feasible_nodes_to_find(percentage: int, nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


@pytest.mark.parametrize(
    ("weight", "wire", "expected"),
    [(5, 10, 500), (5, 1, 50), (1, 7, 70), (100, 3, 3000)],  # score * weight * (100 / 10)
)
def test_extender_points_are_score_times_weight_times_ten(weight: int, wire: int, expected: int) -> None:
    assert extender_points(weight, wire) == expected


def _pod(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers}
    if init is not None:
        spec["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


GPU = frozenset({"nvidia.com/gpu"})
CPU_ONLY = {"name": "c", "resources": {"requests": {"cpu": "1"}}}


@pytest.mark.parametrize(
    ("managed", "pod", "interested"),
    [
        (frozenset(), _pod([CPU_ONLY]), True),  # no managedResources: every pod
        (GPU, _pod([CPU_ONLY]), False),
        (GPU, _pod([{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]), True),
        (GPU, _pod([{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]), True),  # a limit alone
        (GPU, _pod([CPU_ONLY], init=[{"name": "i", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]), True),
        (GPU, _pod([CPU_ONLY, {"name": "d", "resources": {"requests": {"nvidia.com/gpu": "0"}}}]), True),  # named
        # the Alibaba share convention asks through annotations: never seen by managedResources
        (GPU, _pod([CPU_ONLY]) | {"metadata": {"annotations": {"alibabacloud.com/gpu-milli": "500"}}}, False),
    ],
)
def test_an_extender_is_asked_only_about_pods_naming_a_managed_resource(
    managed: frozenset[str], pod: dict[str, Any], interested: bool
) -> None:
    assert is_interested(managed, pod) is interested
