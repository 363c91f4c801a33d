"""Filter verdicts and 0–10 node scores for one pod. Pure: no I/O, web or Kubernetes.

``policy`` (the validated scoring policy), ``plan`` and ``headroom`` (gathering the inputs: placement
and live telemetry), ``formula`` (the small pure score formula), ``judge`` (one pod against many
nodes), ``memo`` (remembered verdicts), ``verdict`` (the plain answer; its wire forms live in
``extender.http``).
"""

from __future__ import annotations

from extender.scoring.judge import evaluate, judge_all
from extender.scoring.memo import Shape, VerdictMemo
from extender.scoring.policy import PolicyError, ScoringPolicy, Weights
from extender.scoring.verdict import Verdict

__all__ = ["PolicyError", "ScoringPolicy", "Shape", "Verdict", "VerdictMemo", "Weights", "evaluate", "judge_all"]
