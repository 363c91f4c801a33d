"""diagnose's hold step: nodes that would take the pod but the reserve holds it off (``scoring.reserve``:
room kept for the whole-GPU pods likely to need it), with until when at the latest (its hold limit,
``scoring.hold_clock``) and how to turn the reserve off."""

from __future__ import annotations

from collections.abc import Mapping

from extender.cluster.state import NodeState
from extender.model.pods import PodRequest
from extender.scoring.hold_clock import until_text
from extender.scoring.holding import Holding
from extender.scoring.verdict import Verdict

__all__ = ["hold_finding", "hold_step_words"]


def hold_step_words(found: Holding, limit_s: float) -> str:
    """Until when, and what to do about it: the words every view of a hold ends with."""
    return (
        f"it waits until those pods have come or room is back, until {until_text(found.until)} at the latest "
        f"(reserve_hold_limit_s: {limit_s:g} s from when kube-scheduler first found no node for it); "
        "reserve_whole_gpus: false in the policy turns the reserve off"
    )


def hold_finding(
    request: PodRequest,
    fitting: list[Verdict],
    nodes: Mapping[str, NodeState],
    found: Holding | None,
    limit_s: float,
) -> tuple[bool, str, tuple[str, ...]]:
    """(whether the hold keeps the pod pending, the finding, the held nodes with the reason each) for
    the verdicts of the nodes that would take it."""
    if found is None:
        return False, "not held by the reserve (room kept for whole-GPU pods)", ()
    after, _ = found.apply(request, fitting, nodes)
    held = [v for v in after if not v.fits]
    free = [v.node for v in after if v.fits]
    evidence = tuple(f"{v.node}: {v.reason}" for v in held)
    if not held:
        return False, "not held: the share takes no room whole-GPU pods need on the nodes it fits", evidence
    names = ", ".join(v.node for v in held)
    if free:
        return False, f"held off {names} for whole-GPU pods; it fits on {', '.join(free)}", evidence
    words = f"held for whole-GPU pods on {names}: {hold_step_words(found, limit_s)}"
    return True, words, evidence
