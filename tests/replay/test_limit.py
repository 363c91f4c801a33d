"""`replay --limit`: each policy's distance to a bound on the same arrivals, read from a JSON file."""

from __future__ import annotations

from typing import Any

import pytest

from extender.advice.replay.limit import Limit, distances, format_distances, limit_json, parse_limit
from extender.advice.replay.openb import ReplayInputError
from extender.advice.replay.sweep import RunCurves, Sweep

OPTIMUM = {"trace": "default", "seeds": {"42": 3.09, "43": 3.09, "44": 3.12, "50": 3.08}}


def _run(policy: str, seed: int, allocated: float | None) -> RunCurves:
    alloc = tuple(allocated if x == 100 else None for x in range(131))
    return RunCurves(policy, seed, alloc, (None,) * 131, 0, 1.0)


def _sweep() -> Sweep:
    """FGD and the advisor on seeds 42, 43 and 51 (51 has no bound)."""
    allocated = {("FGD", 42): 95.2, ("FGD", 43): 95.3, ("FGD", 51): 95.0}
    allocated |= {("advisor", 42): 96.0, ("advisor", 43): 95.9, ("advisor", 51): 96.1}
    runs = {key: _run(*key, value) for key, value in allocated.items()}
    return Sweep("default", ("FGD", "advisor"), (42, 43, 51), runs)


def test_the_optimum_of_the_issue_reads_as_a_bound_by_seed() -> None:
    limit = parse_limit(OPTIMUM, "f")
    assert limit == Limit("default", {42: 3.09, 43: 3.09, 44: 3.12, 50: 3.08})


def test_the_distance_is_unallocated_at_100_minus_the_bound_averaged_over_seeds_with_a_bound() -> None:
    found = distances(_sweep(), parse_limit(OPTIMUM, "f"))
    # FGD: 42: (100 - 95.2) - 3.09 = 1.71; 43: (100 - 95.3) - 3.09 = 1.61; 51 has no bound; mean 1.66
    assert found["FGD"].seeds == {42: 1.71, 43: 1.61}
    assert found["FGD"].mean == pytest.approx(1.66)
    # advisor: 42: 4.0 - 3.09 = 0.91; 43: 4.1 - 3.09 = 1.01; mean 0.96
    assert found["advisor"].seeds == {42: 0.91, 43: 1.01}
    assert found["advisor"].mean == pytest.approx(0.96)


def test_a_run_that_never_reached_100_percent_has_no_distance() -> None:
    sweep = Sweep("default", ("FGD",), (42,), {("FGD", 42): _run("FGD", 42, None)})
    assert distances(sweep, parse_limit(OPTIMUM, "f"))["FGD"].mean is None
    assert format_distances(sweep, parse_limit(OPTIMUM, "f")).splitlines()[1] == "FGD  —"


def test_the_report_names_the_bound_each_policy_and_the_seeds_left_out() -> None:
    lines = format_distances(_sweep(), parse_limit(OPTIMUM, "f")).splitlines()
    # the bound over seeds 42 and 43: (3.09 + 3.09) / 2 = 3.09
    assert lines[0] == "Distance to the limit at 100 % arrived (seeds 42, 43; limit 3.09 %)"
    # FGD unallocated (4.8 + 4.7) / 2 = 4.75, distance 1.66
    assert lines[1] == "    FGD  4.75 % unallocated, +1.66 points from the limit"
    assert lines[2] == "advisor  4.05 % unallocated, +0.96 points from the limit"
    assert lines[3] == "no bound for seed(s) 51: left out of the distance"


def test_the_json_additions_carry_the_bound_and_each_policys_distance() -> None:
    added = limit_json(_sweep(), parse_limit(OPTIMUM, "f"))
    assert added["limit"] == OPTIMUM
    assert added["distance_to_limit"]["advisor"] == {"seeds": {"42": 0.91, "43": 1.01}, "mean": pytest.approx(0.96)}


BAD: list[tuple[str, Any, str]] = [
    ("a list", [3.09], "expected a JSON object"),
    ("no seeds", {"trace": "default"}, '"seeds" must map seeds'),
    ("an unknown key", {"seeds": {"42": 3.0}, "bound": 1}, "unknown key(s) bound"),
    ("a seed that is a word", {"seeds": {"x": 3.0}}, "seed 'x' is not a whole number"),
    ("a negative bound", {"seeds": {"42": -1}}, "seed 42: -1 is not a percentage"),
    ("a bound as text", {"seeds": {"42": "3.09"}}, "seed 42: '3.09' is not a percentage"),
    ("a trace that is not a name", {"trace": 5, "seeds": {"42": 3.0}}, '"trace" must be a trace name'),
]


@pytest.mark.parametrize(("document", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_malformed_bound_is_refused_with_its_reason(document: Any, message: str) -> None:
    with pytest.raises(ReplayInputError) as caught:
        parse_limit(document, "limit.json")
    assert str(caught.value).startswith("limit.json: ")
    assert message in str(caught.value)
