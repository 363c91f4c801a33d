"""The seeded arrival generator for traces without shipped orders."""

from __future__ import annotations

from extender.advice.replay.arrivals import generate_order, tune
from extender.advice.replay.go_random import GoRandom
from extender.advice.replay.specs import NodeSpec, Pod
from tests.replay.conftest import pod

_NODES = tuple(NodeSpec(f"node-{i:02d}", 32000, 1 << 16, 2, "G2") for i in (3, 1, 2, 0))  # 8 GPUs, not name-sorted
_PODS = tuple(Pod(f"pod-{i:02d}", pod(1000, 1, 500 if i % 2 else 1000)) for i in range(6))  # 4500 milli


def test_tuning_up_appends_named_copies_until_the_next_per_gpu_request_would_pass_the_target() -> None:
    order = generate_order(_PODS, _NODES, seed=5)
    requested = sum(p.shape.gpu_request for p in order.pods)
    assert requested <= 1.3 * 8000 < requested + 1000  # stops within one more pod of 10400
    assert {p.name for p in order.pods[:6]} == {p.name for p in _PODS}  # originals first, shuffled
    assert [p.name.split("-tuned-")[1] for p in order.pods[6:]] == [str(k) for k in range(len(order.pods) - 6)]


def test_tuning_down_removes_random_pods_until_at_or_below_the_target() -> None:
    many = [Pod(f"p{i}", pod(1, 2, 1000)) for i in range(10)]  # 20000 milli
    kept = tune(list(many), many, 10400.0, GoRandom(1))
    assert sum(p.shape.gpu_request for p in kept) == 10000


def test_tuning_up_never_tunes_down_when_the_last_multi_gpu_copy_passes_the_target() -> None:
    # Each draw is checked with its per-GPU milli (1000) but adds its whole request (4 x 1000): from 9000,
    # the 4-GPU copy passes the check (10000 <= 10400) and ends at 13000, above the target; it stays.
    big = [Pod("big", pod(1, 4, 1000))]
    kept = tune([Pod(f"p{i}", pod(1, 1, 1000)) for i in range(9)], big, 10400.0, GoRandom(1))
    assert sum(p.shape.gpu_request for p in kept) == 13000


def test_orders_are_a_pure_function_of_the_seed_and_ranks_a_permutation() -> None:
    first, again, other = (generate_order(_PODS, _NODES, seed=s) for s in (42, 42, 43))
    assert first == again
    assert first != other
    assert sorted(first.ranks) == [0, 1, 2, 3]
