"""A fitting verdict's breakdown: its plan's components and its live headroom, read as one mapping."""

from __future__ import annotations

from extender.scoring.verdict import Blend, Verdict

COMPONENTS = {"set": 1.0, "numa": 0.5, "fragmentation": 0.25}


def test_it_reads_as_the_dict_of_the_components_with_the_headroom_last() -> None:
    blend = Blend(COMPONENTS, 0.73)
    assert list(blend.items()) == list({**COMPONENTS, "headroom": 0.73}.items())
    assert blend == {**COMPONENTS, "headroom": 0.73} and len(blend) == 4
    assert blend["headroom"] == 0.73 and blend.get("stranding", 0.5) == 0.5 and "clique" not in blend


def test_a_verdict_with_it_writes_the_same_json_as_with_a_dict() -> None:
    with_blend = Verdict("a", True, "fits", 7, breakdown=Blend(COMPONENTS, 0.73))
    with_dict = Verdict("a", True, "fits", 7, breakdown={**COMPONENTS, "headroom": 0.73})
    assert with_blend.to_dict() == with_dict.to_dict() and with_blend == with_dict
