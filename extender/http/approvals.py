"""What the advisor has approved, counted as taken until the API server shows it, and the bind verb.

kube-scheduler will bind a pod where the advisor put it: on the one node a filter passed (kube-scheduler
then skips prioritize) or on prioritize's top node (the printed profile's weight makes the advisor's
top the winner). From that answer on, this replica counts the pod there (``KubeModel.assume``), so the
next pod is never approved onto room that is already promised, however late the binding reaches the
watch. When the pod is placed again (a failed binding, a retry) its earlier assumption is forgotten.

The bind verb (``/scheduler/bind``) re-checks the pod against the node as every replica has promised
it and binds through the API server (``extender.sources.kube_binder``). A source without an API server
(a snapshot, the simulated cluster) assumes nothing and cannot bind: it says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter
from typing import Any, Protocol

from extender.cluster.claims import Binding
from extender.cluster.dra_view import pod_through_claims
from extender.cluster.state import NodeState
from extender.model.pods import PodSpecError, pod_request
from extender.scoring import Verdict
from extender.scoring.ranking import tie_order

__all__ = ["Approvals", "Binder", "Claimer", "chosen_by_filter", "chosen_by_prioritize"]

_FITS = attrgetter("fits")
_SCORE = attrgetter("score")


class Claimer(Protocol):
    def assume(self, pod: Mapping[str, Any], node: str) -> None: ...
    def forget(self, pod: Mapping[str, Any]) -> None: ...
    def sweep(self) -> None: ...


class Binder(Protocol):
    def bind(self, binding: Binding, check: Callable[[Mapping[str, Any], NodeState], str | None]) -> str: ...

    def read_pod(self, binding: Binding) -> Mapping[str, Any] | str: ...

    async def bind_on_loop(
        self, binding: Binding, check: Callable[[Mapping[str, Any], NodeState], str | None]
    ) -> str: ...

    async def aclose(self) -> None: ...


@dataclass
class Approvals:
    """The live source's model of approved placements, and its binder (None: it cannot bind)."""

    claims: Claimer
    binder: Binder | None = None


def chosen_by_filter(verdicts: list[Verdict]) -> str | None:
    """The node kube-scheduler binds when this filter answer leaves it one: the one that passed."""
    passing = list(compress(verdicts, map(_FITS, verdicts)))
    return passing[0].node if len(passing) == 1 else None


def chosen_by_prioritize(verdicts: list[Verdict]) -> str | None:
    """The node the advisor ranks alone at the top (``ranking``: ties broken by ``tie_order``)."""
    passing = list(compress(verdicts, map(_FITS, verdicts)))
    if not passing:
        return None
    scores = list(map(_SCORE, passing))
    best = max(scores)
    if scores.count(best) == 1:  # as ranking sends them: in passes in C (a Python loop at 5,000 nodes)
        return passing[scores.index(best)].node
    return min((v.node for v, s in zip(passing, scores, strict=True) if s == best), key=tie_order)


def refusal(advisor: Any, pod: Mapping[str, Any], node: NodeState) -> str | None:
    """Why ``pod`` no longer fits ``node`` as now promised (None: it fits): the filter's verdict without
    the reserve's holds (the pod was approved; only room is checked again)."""
    try:
        request = pod_request(pod_through_claims(pod, advisor.state.dra))
    except PodSpecError as exc:
        return f"the pod cannot be read: {exc}"
    if not request.wants_gpu and not request.cpu_milli and not request.memory_mib:
        return None
    verdict = advisor.judge_apart(request, [node.name], {node.name: node}, ranked=False)[0]
    return None if verdict.fits else verdict.reason
