"""``gpu-advisor defrag --apply``: the plan's moves made on the live cluster, in order, with the credentials
of the kubeconfig (``extender.sources.plan_apply``); a move the API server refuses stops the plan there."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from extender.advice.defrag import DefragPlan, World
from gpu_advisor.cli.exits import EXIT_STOPPED, CliError

__all__ = ["apply_plan"]


def apply_plan(args: argparse.Namespace, plan: DefragPlan, world: World) -> int:
    """Make ``plan`` (found on ``world``, the live cluster as listed); 0 when every move was made."""
    from extender.advice import render
    from extender.advice.defrag.movable import pod_key
    from extender.cluster.defrag_intents import controller_of
    from extender.sources.plan_apply import IntentWriter, apply_moves, operator_send

    try:
        send = operator_send(args.kubeconfig)
    except Exception as exc:  # no kubeconfig, or one that names no cluster: the one line
        raise CliError(f"--apply needs your kubeconfig's credentials: {exc}") from None
    pods: dict[str, Any] = {pod_key(obj): obj for _, _, obj in world.bound()}
    out = sys.stderr if args.json else sys.stdout  # --json keeps stdout for the document

    def said(line: str) -> None:
        print(f"  {line}", file=out, flush=True)

    if not args.json:
        print(render.defrag_report(plan, applying=True), flush=True)
    intents = IntentWriter(args.claims_namespace, send)
    applied = apply_moves(plan.moves, pods, controller_of, intents, send, said)
    if args.json:
        print(f'{{"plan": {plan.model_dump_json()}, "applied": {applied.model_dump_json()}}}')
    if applied.stopped_at is not None:
        made = f"{len(applied.evicted)} of {len(plan.moves)} move(s) made"
        raise CliError(
            f"stopped: {applied.stopped_at} was not evicted: {applied.why}; {made}, none after it "
            "(each later move was planned on the ones before)",
            EXIT_STOPPED,
        )
    if not args.json:
        print(f"done: {len(applied.evicted)} pod(s) evicted; their owners' next pods go where the plan said")
    return 0
