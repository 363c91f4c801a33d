"""``POST /v1/defrag``: a defragmentation plan (a dry run) for the snapshot in the body.

Body (JSON or YAML): ``{"snapshot": {...}, "pod": {...}, "budget": 3}``. The snapshot (nodes and pods, or
a Kubernetes List, with any PodDisruptionBudget items) is required: which pods may move depends on
their owners and budgets, which the served model does not keep (``gpu-advisor snapshot`` prints one).
With ``pod``, the fewest moves that make it placeable; without, the moves that strand the least. The
plan is worked out off the event loop (the judging lane), its search bounded by ``MAX_STATES``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request, Response

from extender.advice.defrag import DefragError, DefragPlan, Judge, World, for_fleet, for_pod, movable_pods
from extender.errors import GpuAdvisorError
from extender.http.advisor import Advisor
from extender.http.dryrun_job import parse_dry_run_body
from extender.http.limits import Limits
from extender.http.offloop import Lane
from extender.http.requests import problem_for, read_body
from extender.scoring.holding import look
from extender.sources.snapshot import parse_snapshot

__all__ = ["add_defrag_route"]

_BODY = {
    "description": "{snapshot, pod?, budget?}: the cluster (nodes and pods, or a Kubernetes List with any "
    "PodDisruptionBudget items), the pending pod to make room for, the most moves (default 3). JSON or YAML.",
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
    422: {"description": "no snapshot, a bad budget, a pod that fits already or cannot be read"},
}


def plan_for(doc: Any, advisor: Advisor, now: float) -> DefragPlan:
    """The plan a body asks for (pure but for the advisor's policy)."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("snapshot"), Mapping):
        raise DefragError("a plan needs {'snapshot': ...}: which pods may move depends on their owners and budgets")
    budget, pod = doc.get("budget", 3), doc.get("pod")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise DefragError(f"budget {budget!r}: a plan needs a budget of at least 1 move")
    if pod is not None and not isinstance(pod, Mapping):
        raise DefragError("'pod' must be a Pod manifest")
    snap = parse_snapshot(doc["snapshot"], now=now)
    nodes = snap.cluster("snapshot").nodes_by_name()
    mix, _ = look(nodes, snap.pods, advisor.policy, now)
    world, judge = World.of(snap.nodes, snap.pods, nodes), Judge(advisor.policy, now, None, mix)
    items = doc["snapshot"].get("items") or []
    budgets = [i for i in items if isinstance(i, Mapping) and i.get("kind") == "PodDisruptionBudget"]
    ceiling = ((pod.get("spec") or {}).get("priority") or 0) if pod is not None else None
    movable = movable_pods([obj for _, _, obj in world.bound()], budgets, ceiling)
    return for_pod(world, pod, movable, judge, budget) if pod is not None else for_fleet(world, movable, judge, budget)


def add_defrag_route(router: APIRouter, advisor: Advisor, limits: Limits, lane: Lane) -> None:
    @router.post(
        "/defrag", tags=["defrag"], response_model=DefragPlan, openapi_extra={"requestBody": _BODY}, responses=_ERRORS
    )
    async def defrag_route(request: Request) -> Response:
        try:
            body = await read_body(request, limits.dry_run_body)
            now = advisor.clock()
            answer = await lane.run(lambda: _answer(body, advisor, limits, now))
        except GpuAdvisorError as exc:
            return problem_for(exc)
        return Response(answer, media_type="application/json")


def _answer(body: bytes, advisor: Advisor, limits: Limits, now: float) -> str:
    doc = parse_dry_run_body(body, limits)
    try:
        return plan_for(doc, advisor, now).model_dump_json()
    except GpuAdvisorError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # a snapshot shaped as nobody foresaw
        raise DefragError(f"cannot plan on this snapshot ({type(exc).__name__}: {exc})") from None
