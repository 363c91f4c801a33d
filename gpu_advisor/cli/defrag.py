"""``gpu-advisor defrag``: a few pod moves that make a pending pod placeable, or that strand less (dry run)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from extender.errors import GpuAdvisorError
from gpu_advisor.cli.exits import EXIT_NO_ANSWER, CliError

__all__ = ["register"]


def _pending(path: str) -> dict[str, Any]:
    """The pod the plan is for: a Pod, or a workload's pod template under the workload's name."""
    from extender.http.manifests import read_manifest_file
    from extender.model.pods import pod_template

    manifest = read_manifest_file(path)
    template = pod_template(manifest) if isinstance(manifest, dict) else None
    if template is None:
        raise CliError(f"{path}: not a Pod or a workload with a pod template")
    return {"metadata": manifest.get("metadata") or {}, "spec": template.get("spec") or {}}


def _defrag(args: argparse.Namespace) -> int:
    from extender.advice import render
    from extender.advice.defrag import DefragError, Judge, World, for_fleet, for_pod, movable_pods
    from extender.scoring.holding import look
    from extender.sources.cluster_choice import KUBE, one_look
    from extender.sources.disruption_budgets import disruption_budgets
    from gpu_advisor.cli.cluster import _policy

    if args.budget < 1:
        raise CliError(f"--budget {args.budget}: a plan needs a budget of at least 1 move")
    if args.apply and args.cluster != KUBE:
        raise CliError("--apply evicts on the live cluster the plan is made on: use it with --cluster kube")
    pending = _pending(args.manifest) if args.manifest else None
    snap = one_look(args.cluster, args.kubeconfig)
    nodes, now, policy = snap.cluster(args.cluster).nodes_by_name(), time.time(), _policy(args)
    target = (pending or {}).get("spec", {}).get("nodeName") if pending else None
    if target and target not in nodes:
        raise CliError(f"{args.manifest}: spec.nodeName {target!r} is not a node of {args.cluster}")
    mix, _ = look(nodes, snap.pods, policy, now)
    judge, world = Judge(policy, now, None, mix), World.of(snap.nodes, snap.pods, nodes)
    placed = [obj for _, _, obj in world.bound()]
    ceiling = ((pending.get("spec") or {}).get("priority") or 0) if pending else None
    movable = movable_pods(placed, disruption_budgets(args.cluster, args.kubeconfig), ceiling)
    try:
        plan = (
            for_pod(world, pending, movable, judge, args.budget)
            if pending
            else for_fleet(world, movable, judge, args.budget)
        )
    except DefragError as exc:
        raise DefragError(f"{args.manifest}: {exc}" if args.manifest else str(exc)) from None
    if args.apply and plan.found:
        from gpu_advisor.cli.defrag_apply import apply_plan

        return apply_plan(args, plan, world)
    print(plan.model_dump_json(indent=2) if args.json else render.defrag_report(plan))
    return 0 if plan.found else EXIT_NO_ANSWER


def _cmd(args: argparse.Namespace) -> int:
    try:
        return _defrag(args)
    except GpuAdvisorError:
        raise
    except (KeyError, TypeError, AttributeError) as exc:  # a snapshot shaped in a way the model did not foresee
        print(f"gpu-advisor: error: cannot plan on this cluster ({type(exc).__name__}: {exc})", file=sys.stderr)
        return 2


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmd = commands.add_parser(
        "defrag", help="a few pod moves that make a pending pod placeable, or that strand less (a dry run)"
    )
    cmd.add_argument("--for", dest="manifest", metavar="POD.yaml", help="the pending pod to make room for")
    cmd.add_argument("--budget", type=int, default=3, metavar="N", help="most moves in the plan (default 3)")
    cmd.add_argument(
        "--cluster",
        default="simulated",
        metavar="simulated|kube|FILE",
        help="the cluster to plan on (default simulated)",
    )
    cmd.add_argument("--kubeconfig", help="kubeconfig file for --cluster kube")
    cmd.add_argument("--policy", metavar="FILE", help="the scoring policy the extender serves (YAML/JSON)")
    cmd.add_argument("--json", action="store_true", help="print the plan as JSON")
    cmd.add_argument(
        "--apply",
        action="store_true",
        help="make the plan: evict its pods in order through the Eviction API with your kubeconfig's "
        "credentials, each after telling the advisor where its replacement goes (--cluster kube)",
    )
    cmd.add_argument(
        "--claims-namespace",
        default="gpu-advisor",
        metavar="NS",
        help="where the advisor keeps its Leases: --apply writes each move's intent there (default gpu-advisor)",
    )
    cmd.set_defaults(handler=_cmd)
