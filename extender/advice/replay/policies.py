"""The policies a replay can run, by the names the command line and the `--json` contract use.

The six published baselines keep the paper's names; the advisor's own policy joins them here.
"""

from __future__ import annotations

from collections.abc import Callable

from extender.advice.replay.advisor_policy import ADVISOR_POLICIES, AdvisorPolicy
from extender.advice.replay.baselines import POLICIES as BASELINES
from extender.advice.replay.moves import split_defrag
from extender.advice.replay.scorer import Scorer
from extender.scoring.policy import ScoringPolicy

__all__ = ["BASELINES", "make_policy", "policy_names", "unknown_policies"]


def _registry() -> dict[str, Callable[[], Scorer]]:
    return {**ADVISOR_POLICIES, **BASELINES}


def policy_names() -> list[str]:
    """Every known policy name, in display order."""
    return list(_registry())


def unknown_policies(names: list[str]) -> list[str]:
    """The names that are not policies."""
    known = _registry()
    return [name for name in names if split_defrag(name)[0] not in known or split_defrag(name)[1] < 0]


def make_policy(name: str, scoring: ScoringPolicy | None = None) -> Scorer:
    """A fresh scorer for one run (scorers hold per-run state, so runs never share one); the advisor's
    policies judge with ``scoring`` (None: the defaults). ``NAME+defragB`` is NAME's scorer: the moves
    are the engine's (``moves``)."""
    name = split_defrag(name)[0]
    if name in ADVISOR_POLICIES and scoring is not None:
        return AdvisorPolicy(given=name == "advisor-given", policy=scoring)
    factory = _registry().get(name)
    if factory is None:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(_registry())}")
    return factory()
