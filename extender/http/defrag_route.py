"""``POST /v1/defrag``: a defragmentation plan (a dry run), on the served model or on the snapshot in the body.

Body (JSON or YAML): ``{"pod": {...}, "budget": 3, "snapshot": {...}}``, every part optional. With ``pod``,
the fewest moves that make it placeable; without, the moves that strand the least. Without ``snapshot``
the plan is made on what the advisor serves: its own model of the live cluster (with the bound pods and
PodDisruptionBudgets listed now, ``extender.sources.defrag_look``), or the snapshot it serves. With one
(nodes and pods, or a Kubernetes List with any PodDisruptionBudget items), on that. The plan is worked
out off the event loop (the judging lane), one at a time per replica (another asked meanwhile: 429), its
search bounded by ``MAX_STATES``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request, Response

from extender.advice.defrag import DefragError, DefragPlan, Judge, World, for_fleet, for_pod, movable_pods
from extender.errors import GpuAdvisorError, SourceError
from extender.http.advisor import Advisor
from extender.http.dryrun_job import parse_dry_run_body
from extender.http.limits import Limits
from extender.http.offloop import Lane
from extender.http.requests import problem, problem_for, read_body
from extender.scoring.holding import look
from extender.sources.snapshot import parse_snapshot

__all__ = ["add_defrag_route"]

_BODY = {
    "description": "{pod?, budget?, snapshot?}: the pending pod to make room for, the most moves (default 3), the "
    "cluster (nodes and pods, or a Kubernetes List with any PodDisruptionBudget items; default: the one served). "
    "JSON or YAML.",
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {
                    "snapshot": {"type": "object"},
                    "pod": {"type": "object"},
                    "budget": {"type": "integer", "minimum": 1},
                },
            }
        }
    },
}
_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "unreadable body: not JSON or YAML, nested too deeply, empty"},
    401: {"description": "no valid bearer token (when /v1 requires one)"},
    403: {"description": "the token's user may not use /v1"},
    413: {"description": "the body is over the dry-run body limit"},
    422: {"description": "a bad budget, a pod that fits already, names an unknown node or cannot be read"},
    429: {"description": "another plan is being worked out on this replica: ask again when it is done"},
    503: {"description": "the live model is not synced yet, or the API server did not list pods or budgets"},
}


def plan_for(doc: Any, advisor: Advisor, now: float) -> DefragPlan:
    """The plan a body asks for (pure but for the advisor's policy, model and look)."""
    if not isinstance(doc, Mapping):
        raise DefragError("a plan is asked for with {'pod'?: ..., 'budget'?: ..., 'snapshot'?: ...}")
    budget, pod, snapshot = doc.get("budget", 3), doc.get("pod"), doc.get("snapshot")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise DefragError(f"budget {budget!r}: a plan needs a budget of at least 1 move")
    if pod is not None and not isinstance(pod, Mapping):
        raise DefragError("'pod' must be a Pod manifest")
    if snapshot is not None and not isinstance(snapshot, Mapping):
        raise DefragError("'snapshot' must be a snapshot document (nodes and pods, or a Kubernetes List)")
    world, judge, budgets = _on_snapshot(snapshot, advisor, now) if snapshot else _served(advisor, now)
    target = (pod.get("spec") or {}).get("nodeName") if pod is not None else None
    if target and target not in world.states:
        raise DefragError(f"the pod's spec.nodeName {target!r} is not a node of this cluster")
    ceiling = ((pod.get("spec") or {}).get("priority") or 0) if pod is not None else None
    movable = movable_pods([obj for _, _, obj in world.bound()], budgets, ceiling)
    return for_pod(world, pod, movable, judge, budget) if pod is not None else for_fleet(world, movable, judge, budget)


def _on_snapshot(snapshot: Mapping[str, Any], advisor: Advisor, now: float) -> tuple[World, Judge, list[Any]]:
    snap = parse_snapshot(snapshot, now=now)
    nodes = snap.cluster("snapshot").nodes_by_name()
    mix, _ = look(nodes, snap.pods, advisor.policy, now)
    items = snapshot.get("items") or []
    budgets = [i for i in items if isinstance(i, Mapping) and i.get("kind") == "PodDisruptionBudget"]
    return World.of(snap.nodes, snap.pods, nodes), Judge(advisor.policy, now, None, mix), budgets


def _served(advisor: Advisor, now: float) -> tuple[World, Judge, list[Any]]:
    """The served model, with the advisor's learned mix: the stranding it places against."""
    if advisor.defrag_look is None:
        raise DefragError("a plan needs {'snapshot': ...}: this advisor serves no cluster a plan can be made on")
    if not advisor.state.ready:
        raise SourceError("the advisor's model is not synced with the cluster yet: ask again in a moment")
    seen = advisor.defrag_look()
    world = World.of(seen.nodes, seen.pods, advisor.state.nodes_by_name())
    return world, Judge(advisor.policy, now, None, advisor.learner.current), list(seen.budgets)


def add_defrag_route(router: APIRouter, advisor: Advisor, limits: Limits, lane: Lane) -> None:
    working = [False]  # a plan is being worked out: set and read on the event loop only

    @router.post(
        "/defrag", tags=["defrag"], response_model=DefragPlan, openapi_extra={"requestBody": _BODY}, responses=_ERRORS
    )
    async def defrag_route(request: Request) -> Response:
        try:
            body = await read_body(request, limits.dry_run_body)
            if working[0]:
                return problem(429, "another plan is being worked out on this replica: ask again when it is done")
            working[0] = True
            try:
                now = advisor.clock()
                answer = await lane.run(lambda: _answer(body, advisor, limits, now))
            finally:
                working[0] = False
        except GpuAdvisorError as exc:
            return problem_for(exc)
        return Response(answer, media_type="application/json")


def _answer(body: bytes, advisor: Advisor, limits: Limits, now: float) -> str:
    doc = parse_dry_run_body(body, limits)
    try:
        return plan_for(doc, advisor, now).model_dump_json()
    except GpuAdvisorError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # a cluster shaped as nobody foresaw
        raise DefragError(f"cannot plan on this cluster ({type(exc).__name__}: {exc})") from None
