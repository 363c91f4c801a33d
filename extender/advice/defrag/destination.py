"""Where the advisor would place a pod in a world: eligibility first (selectors, taints), then its own
filter and score (``scoring.judge_all``), the top verdict as kube-scheduler would take it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extender.cluster.selectors import node_admits
from extender.cluster.state import NodeState
from extender.model.pods import PodRequest
from extender.model.readings import TelemetryBoard
from extender.scoring import ScoringPolicy, judge_all
from extender.scoring.ranking import tie_order
from extender.scoring.verdict import Verdict
from extender.scoring.workload import NO_MIX, Mix

__all__ = ["Judge"]


@dataclass(frozen=True)
class Judge:
    """The advisor's judgement as a plan uses it: policy, telemetry, clock and learned mix."""

    policy: ScoringPolicy
    now: float
    telemetry: TelemetryBoard | None = None
    mix: Mix = NO_MIX

    def verdicts(
        self, request: PodRequest, spec: Mapping[str, Any], nodes: Mapping[str, NodeState], skip: str | None = None
    ) -> list[Verdict]:
        """Every eligible node's verdict (``skip``: a node left out, the one the pod leaves)."""
        names = [n for n in sorted(nodes) if n != skip and node_admits(nodes[n], spec) is None]
        return judge_all(request, names, nodes, self.telemetry, self.policy, self.now, mix=self.mix)

    def best(
        self, request: PodRequest, spec: Mapping[str, Any], nodes: Mapping[str, NodeState], skip: str | None = None
    ) -> Verdict | None:
        """The node the pod would go to (highest score, then full-precision rank, then tie order); None."""
        fitting = [v for v in self.verdicts(request, spec, nodes, skip) if v.fits]
        if not fitting:
            return None
        return min(fitting, key=lambda v: (-v.score, -v.rank[0], -v.rank[1], tie_order(v.node)))
