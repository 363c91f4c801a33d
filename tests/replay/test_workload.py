"""FGD's typical-pod distribution, fixed and learned online."""

from __future__ import annotations

from collections import Counter

import pytest

from extender.advice.replay.workload import OnlineWorkload, spec_key, typical_pods, workload_from_counts
from tests.replay.conftest import pod


def test_specs_sorted_by_count_then_larger_spec_first_and_kept_up_to_the_threshold() -> None:
    counts = Counter({(1000, 500, 1, ""): 50, (2000, 0, 0, ""): 30, (1000, 1000, 1, ""): 30, (4000, 1000, 8, ""): 20})
    workload = workload_from_counts(counts, threshold_pct=60.0)
    # 60 % of 130 pods = 78: 50 < 78 -> 50+30 = 80 (the larger of the two 30s first: cpu 2000 > 1000) >= 78: stop
    assert [(p.cpu_milli, p.gpu_milli) for p in workload.pods] == [(1000, 500), (2000, 0)]
    # renormalised: (50/130) / (80/130) = 0.625 and (30/130) / (80/130) = 0.375
    assert [round(p.probability, 12) for p in workload.pods] == [0.625, 0.375]
    assert workload.coverage == pytest.approx(80 / 130)


def test_memory_is_not_part_of_a_spec() -> None:
    assert spec_key(pod(1000, 1, 500, mem=1)) == spec_key(pod(1000, 1, 500, mem=2)) == (1000, 500, 1, "")
    assert len(typical_pods([pod(1000, 1, 500, mem=1), pod(1000, 1, 500, mem=2)]).pods) == 1


def test_online_workload_tracks_the_arrivals_seen_so_far() -> None:
    online = OnlineWorkload(threshold_pct=100.0)
    assert online.current().pods == ()
    for shape in (pod(1000, 1, 500), pod(1000, 1, 500), pod(2000)):
        online.observe(shape)
    current = online.current()
    assert online.seen == 3
    assert [(p.gpu_milli, round(p.probability, 6)) for p in current.pods] == [(500, 0.666667), (0, 0.333333)]
    assert online.current() is current  # unchanged counts: no recomputation
    expected = typical_pods([pod(1000, 1, 500), pod(1000, 1, 500), pod(2000)], threshold_pct=100.0)
    assert current == expected
