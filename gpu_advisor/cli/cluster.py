"""``gpu-advisor explain|diagnose|snapshot``: questions asked of a cluster (simulated, live or a snapshot)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from extender.cluster.state import ClusterState
from extender.model.readings import TelemetryBoard
from extender.scoring.policy import ScoringPolicy
from extender.sources.cluster_choice import one_look
from extender.sources.snapshot import Snapshot
from gpu_advisor.cli.exits import EXIT_NO_ANSWER, CliError

__all__ = ["register"]

_CLUSTER_HELP = (
    "the built-in simulated cluster (default; simulated-rack: beside an NVL72 rack), the live cluster, "
    "or a snapshot file"
)
# explain's first line (stderr) when no --cluster was given.
DEFAULT_CLUSTER_NOTE = (
    "explain: about the built-in simulated cluster (--cluster kube for yours, --cluster FILE for a snapshot)"
)


def _telemetry(
    args: argparse.Namespace, snap: Snapshot, state: ClusterState, max_age_s: float, pod_key: str | None = None
) -> TelemetryBoard:
    """The snapshot's readings, or one poll of ``--prometheus`` (with the pod's SM history for diagnose).
    A malformed URL is bad input; a Prometheus that does not answer only weakens the answer."""
    board = snap.telemetry(max_age_s)
    if not args.prometheus:
        return board
    from extender.sources.pod_index import directory_source
    from extender.sources.prometheus import PrometheusTelemetry

    source = PrometheusTelemetry(args.prometheus, board, where=directory_source(state, snap.pods))
    try:
        source.refresh_with_history(pod_key) if pod_key else source.refresh()
    except Exception as exc:  # a missing Prometheus weakens the answer; it does not stop it
        print(f"gpu-advisor: warning: no telemetry from {args.prometheus}: {exc}", file=sys.stderr)
    return board


def _policy(args: argparse.Namespace) -> ScoringPolicy:
    from extender.sources.policy_file import load_policy

    return load_policy(args.policy) if args.policy else ScoringPolicy()


def _explain(args: argparse.Namespace) -> int:
    from extender.advice import render
    from extender.advice.dryrun import DryRunError, dry_run
    from extender.cluster.dra_view import pod_through_claims, workload_and_claims
    from extender.http.manifests import read_manifest_file
    from extender.scoring.holding import look
    from webhook.rules import advise_with_rules

    manifest = read_manifest_file(args.manifest)
    default = args.cluster is None  # said with the answer, so nobody takes it for one about their cluster
    args.cluster = "simulated" if default else args.cluster
    snap = one_look(args.cluster, args.kubeconfig)
    policy = _policy(args)
    state = snap.cluster(args.cluster)
    manifest, beside = workload_and_claims(manifest)  # a List or several documents: the workload, its claims
    # GPUs asked through DRA claims the file or the snapshot holds
    manifest = pod_through_claims(pod_through_claims(manifest, beside), state.dra)
    telemetry = _telemetry(args, snap, state, policy.telemetry_max_age_s)
    try:
        nodes, now = state.nodes_by_name(), time.time()
        mix, reserve = look(nodes, snap.pods, policy, now)
        answer = dry_run(manifest, nodes, telemetry, policy, now, None, advise_with_rules, mix, reserve)
    except DryRunError as exc:
        raise DryRunError(f"{args.manifest}: {exc}") from None
    if default:
        print(DEFAULT_CLUSTER_NOTE, file=sys.stderr, flush=True)
    print(answer.model_dump_json(indent=2) if args.json else render.dry_run_report(answer))
    return 0 if answer.schedulable else EXIT_NO_ANSWER


def _diagnose(args: argparse.Namespace) -> int:
    from extender.advice import render
    from extender.advice.diagnose import diagnose
    from extender.cluster.dra_view import pod_through_claims
    from extender.scoring.holding import look

    snap = one_look(args.cluster, args.kubeconfig)
    wanted = (args.namespace, args.pod)
    pod = next((p for p in snap.pods if _key(p) == wanted), None)
    if pod is None:
        # The name in another namespace is the likeliest slip: name it, and the flag that reaches it.
        elsewhere = sorted({str(ns) for ns, name in map(_key, snap.pods) if name == args.pod and ns})
        hint = f"; {args.pod} is in {', '.join(elsewhere)}: -n {elsewhere[0]}" if elsewhere else ""
        raise CliError(f"no GPU pod {args.namespace}/{args.pod} in {args.cluster}{hint}")
    policy = _policy(args)
    state = snap.cluster(args.cluster)
    telemetry = _telemetry(args, snap, state, policy.telemetry_max_age_s, f"{args.namespace}/{args.pod}")
    now = time.time()
    mix, reserve = look(state.nodes_by_name(), snap.pods, policy, now)
    pod = dict(pod_through_claims(pod, state.dra))  # GPUs asked through DRA claims, as explain reads them
    result = diagnose(pod, state.nodes_by_name(), telemetry, policy, now, mix, reserve)
    print(json.dumps(result.to_dict(), indent=2) if args.json else render.diagnosis_report(result))
    return 0


def _key(pod: dict[str, Any]) -> tuple[Any, Any]:
    meta = pod.get("metadata") or {}
    return meta.get("namespace"), meta.get("name")


def _snapshot(args: argparse.Namespace) -> int:
    import yaml

    snap = one_look(args.cluster, args.kubeconfig)
    doc = {"apiVersion": "v1", "kind": "List", "items": [*snap.nodes, *snap.pods]}
    print(yaml.safe_dump(doc, sort_keys=False), end="")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    explain = commands.add_parser("explain", help="where would this pod or workload go, and why (or why not)?")
    explain.add_argument("manifest", metavar="MANIFEST", help="a Pod or workload manifest (YAML or JSON)")
    explain.add_argument("--cluster", metavar="simulated|kube|FILE", help=_CLUSTER_HELP)
    explain.add_argument("--kubeconfig", help="kubeconfig file for --cluster kube")
    explain.add_argument("--prometheus", metavar="URL", help="Prometheus with DCGM exporter series: live headroom")
    explain.add_argument("--json", action="store_true", help="print the dry-run answer as JSON")
    explain.add_argument("--policy", metavar="FILE", help="the scoring policy the extender serves (YAML/JSON)")
    explain.set_defaults(handler=_explain)

    diag = commands.add_parser(
        "diagnose", help="why is this GPU pod pending (or slow)? allocation → memory → placement → application"
    )
    diag.add_argument("pod", metavar="POD", help="the pod's name")
    diag.add_argument("-n", "--namespace", default="default", help="the pod's namespace (default default)")
    diag.add_argument(
        "--cluster",
        default="kube",
        metavar="kube|simulated|FILE",
        help="the live cluster (default kube), the built-in simulated cluster, or a snapshot file",
    )
    diag.add_argument("--kubeconfig", help="kubeconfig file for --cluster kube")
    diag.add_argument("--prometheus", metavar="URL", help="Prometheus with DCGM exporter series (SM history)")
    diag.add_argument("--json", action="store_true", help="print the diagnosis as JSON")
    diag.add_argument("--policy", metavar="FILE", help="the scoring policy the extender serves (YAML/JSON)")
    diag.set_defaults(handler=_diagnose)

    snapshot = commands.add_parser("snapshot", help="print the cluster's GPU state as a snapshot file (YAML)")
    snapshot.add_argument(
        "--cluster",
        default="kube",
        metavar="kube|simulated|FILE",
        help="the live cluster (default kube), the built-in simulated cluster, or a snapshot file",
    )
    snapshot.add_argument("--kubeconfig", help="kubeconfig file for --cluster kube")
    snapshot.set_defaults(handler=_snapshot)
