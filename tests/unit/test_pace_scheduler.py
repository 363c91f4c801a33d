"""The pace benchmark sends what kube-scheduler sends: the nodes its own filters pass, in the order its
parallel filter finds them (``benchmarks/pace_scheduler.py``)."""

from __future__ import annotations

import random

import pytest

from benchmarks.pace_scheduler import Room, chunk_size, found_order


@pytest.mark.parametrize(
    ("n", "size"),
    [
        (1000, 31),  # sqrt(1000) = 31.6 → 31, under 1000/16 + 1 = 63
        (5000, 70),  # sqrt(5000) = 70.7 → 70, under 5000/16 + 1 = 313
        (100, 7),  # sqrt(100) = 10, but 100/16 + 1 = 7
        (3, 1),  # sqrt(3) = 1.7 → 1
        (0, 1),  # at least 1
    ],
)
def test_chunks_are_client_gos_size(n: int, size: int) -> None:
    assert chunk_size(n) == size


def test_the_order_holds_every_node_once_each_chunk_in_its_own_order() -> None:
    names = [f"n{i:04d}" for i in range(1000)]
    order = found_order(names, random.Random(7))
    assert sorted(order) == names and order != names
    for start in range(0, 1000, 31):  # a chunk's nodes are checked one after the other
        chunk = names[start : start + 31]
        assert [n for n in order if n in set(chunk)] == chunk


def test_two_calls_send_the_same_nodes_in_different_orders() -> None:
    names = [f"n{i:04d}" for i in range(200)]
    rng = random.Random(1)
    assert found_order(names, rng) != found_order(names, rng)


def test_node_resources_fit_leaves_out_a_node_without_room() -> None:
    room = Room({"a": 8, "b": 1, "share": 0}, {"a": 4000, "b": 96000, "share": 96000})
    assert room.fits(["a", "b", "share"], gpus=2, cpu_milli=1000) == ["a"]  # b has 1 GPU, share none
    assert room.fits(["a", "b", "share"], gpus=0, cpu_milli=2000) == ["a", "b", "share"]
    room.take("a", 2, 3000)  # 6 GPUs and 1000 milli-CPU left
    assert room.fits(["a", "b", "share"], gpus=1, cpu_milli=2000) == ["b"]
