"""Go's math/rand value stream, reproduced: the values any Go program prints, and the paper's orders."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.advice.replay import openb
from extender.advice.replay.arrivals import generate_order
from extender.advice.replay.baselines import PUBLISHED_LABELS
from extender.advice.replay.go_random import GoRandom, cooked
from extender.advice.replay.run import run_many

SHIPPED = ("default", "multigpu50", "gpushare100", "gpuspec33")


def test_the_cooked_register_is_gos_table_worked_out_by_jumping_ahead() -> None:
    table = cooked()
    # Go's rngCooked[0] is -4181792142133755926 as an int64: 2^64 - 4181792142133755926 as a word.
    assert (len(table), table[0], table[-1]) == (607, (1 << 64) - 4181792142133755926, 4152330101494654406)


def test_seed_1_gives_the_values_every_go_program_printed_before_go_1_20() -> None:
    rng = GoRandom(1)
    assert [rng.int63() for _ in range(3)] == [5577006791947779410, 8674665223082153551, 6129484611666145821]
    rng = GoRandom(1)
    assert [rng.intn(100) for _ in range(10)] == [81, 87, 47, 59, 81, 18, 25, 40, 56, 0]


def test_perm_and_shuffle_are_permutations_and_bad_bounds_are_refused() -> None:
    rng = GoRandom(7)
    assert sorted(rng.perm(50)) == list(range(50))
    items = list(range(50))
    rng.shuffle(items)
    assert sorted(items) == list(range(50)) and items != list(range(50))
    with pytest.raises(ValueError, match="0 < n"):
        rng.intn(0)


@pytest.mark.parametrize("trace", SHIPPED)
def test_drawn_orders_are_the_shipped_orders_for_every_seed(traces: Path, trace: str) -> None:
    nodes = openb.load_nodes(traces / "openb" / openb.NODE_LIST)
    pods = openb.load_pods(openb.pod_csv(traces, trace))
    shipped = openb.load_shipped_orders(traces, trace, pods, len(nodes))
    assert sorted(shipped) == list(range(42, 52))
    for seed, order in shipped.items():
        drawn = generate_order(pods, nodes, seed)
        assert [p.name for p in drawn.pods] == [p.name for p in order.pods], seed
        assert drawn.ranks == order.ranks, seed


def test_a_trace_without_shipped_orders_replays_its_published_runs_column_for_column(traces: Path) -> None:
    # gpushare60 ships no orders: the drawn order of seed 42 gives FGD's published curve, all 131 points.
    result = run_many("gpushare60", ["FGD"], [42], None, jobs=1, traces=traces)
    published = {
        (run.trace, run.policy, run.seed): run.values
        for run in openb.load_published(traces / "fgd-expected" / "analysis_allo_discrete.csv")
    }
    curve = result["policies"]["FGD"]["seeds"]["42"]["alloc_pct"]
    assert tuple(curve[str(x)] for x in range(131)) == published[("gpushare60", PUBLISHED_LABELS["FGD"], 42)]
