"""The score formula: small pure functions, each with the arithmetic written beside the answer."""

from __future__ import annotations

import pytest

from extender.scoring import ScoringPolicy
from extender.scoring.formula import fragmentation, node_score, numa, packing, set_value

WEIGHTS = ScoringPolicy().weights.as_dict()  # set .5, fragmentation .2, headroom .15, numa .05, packing .1


@pytest.mark.parametrize(
    ("components", "expected"),
    [
        # 10 × (.5×1 + .2×1 + .15×1 + .05×1 + .1×1) / 1 = 10
        ({"set": 1, "fragmentation": 1, "headroom": 1, "numa": 1, "packing": 1}, 10),
        # 10 × (.5×.6 + .2×.5 + .15×1 + .05×0 + .1×.25) = 10 × .575 = 5.75 → 6
        ({"set": 0.6, "fragmentation": 0.5, "headroom": 1, "numa": 0, "packing": 0.25}, 6),
        # missing components are neutral: 10 × .5 = 5
        ({}, 5),
    ],
)
def test_the_node_score_is_the_weighted_mean_on_0_to_10(components: dict[str, float], expected: int) -> None:
    assert node_score(components, WEIGHTS, sum(WEIGHTS.values())) == expected


@pytest.mark.parametrize(
    ("k", "score", "best", "share", "expected"),
    [
        (1, 0, 0, 1.0, 1.0),  # a single GPU is always a perfect set
        (2, 220, 220, 1.0, 1.0),  # ½ × 220/220 + ½ × 1
        (4, 510, 1020, 0.5, 0.5),  # ½ × 510/1020 + ½ × 0.5 = .25 + .25
        (2, 10, 0, 0.0, 0.0),  # no best known: the relative half counts 0
    ],
)
def test_the_set_value_is_half_relative_to_the_nodes_best_and_half_nvlink(
    k: int, score: int, best: int, share: float, expected: float
) -> None:
    assert set_value(k, score, best, share) == expected


def test_fragmentation_averages_what_survives_and_an_exact_fit_strands_nothing() -> None:
    assert fragmentation([1.0, 0.5], leaves_any=True) == 0.75  # (1 + .5) / 2
    assert fragmentation([0.2], leaves_any=False) == 1.0
    assert fragmentation([], leaves_any=True) == 1.0


def test_numa_and_packing() -> None:
    assert (numa({0}), numa({0, 1}), numa({0, None})) == (1.0, 0.0, 0.5)
    assert packing("binpack", 6, 8) == 0.75 and packing("spread", 6, 8) == 0.25  # 6/8 used, 2/8 free
    assert packing("binpack", 1, 0) == 0.5
