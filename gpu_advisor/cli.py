"""The ``gpu-advisor`` command line.

Exit codes: 0 done; 2 bad input or usage (one line on stderr, never a traceback); 3 a valid question
with no answer (e.g. no GPU set of that size is free).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from extender.model.machines import bundled_machines
from extender.model.smi_topo import parse_topo_matrix
from extender.model.topology import GpuTopology, TopologyError
from extender.placement import POLICIES
from gpu_advisor import replay_cli

__all__ = ["main"]

EXIT_BAD_INPUT = 2
EXIT_NO_ANSWER = 3


class CliError(Exception):
    """A message for the user and the exit code that goes with it."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.code = code


def parse_topology_text(text: str) -> GpuTopology:
    """A topology JSON document or ``nvidia-smi topo -m`` text, told apart by the first character."""
    if text.lstrip().startswith("{"):
        return GpuTopology.from_json(text)
    return parse_topo_matrix(text)


def read_topology_file(path: str) -> GpuTopology:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not data.strip():
        raise CliError(f"{path} is empty: expected nvidia-smi topo -m text or a topology JSON document")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CliError(f"{path} is not text (binary data?): expected nvidia-smi topo -m or JSON") from None
    try:
        return parse_topology_text(text)
    except TopologyError as exc:
        raise CliError(f"{path}: {exc}") from None


def _topology_from_args(args: argparse.Namespace) -> GpuTopology:
    if args.file and (args.nvml or args.example):
        raise CliError("give FILE, --example or --nvml, not more than one")
    if args.nvml:
        from extender.sources import nvml

        try:
            return nvml.discover_topology(nvml.load_nvml())
        except nvml.NvmlUnavailable as exc:
            raise CliError(str(exc)) from None
    if args.example:
        machines = bundled_machines()
        if args.example not in machines:
            raise CliError(f"no bundled example {args.example!r}; choose one of: {', '.join(machines)}")
        return parse_topo_matrix(machines[args.example])
    if args.file:
        return read_topology_file(args.file)
    raise CliError("name a FILE, --example NAME or --nvml (bundled examples: " + ", ".join(bundled_machines()) + ")")


def _cmd_topology_show(args: argparse.Namespace) -> int:
    from extender.advice import render

    topo = _topology_from_args(args)
    print(topo.to_json(indent=2) if args.json else render.topology_report(topo))
    return 0


def _gpu_list(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected GPU indices such as 0,2,4, got {text!r}") from None


def _cmd_topology_best(args: argparse.Namespace) -> int:
    from extender.advice import render
    from extender.placement import PlacementImpossible, best_placement

    topo = _topology_from_args(args)
    try:
        placement = best_placement(topo, args.gpus, free=args.free, required=args.required or (), policy=args.policy)
    except PlacementImpossible as exc:
        raise CliError(f"no set of {args.gpus} GPUs: {exc}", EXIT_NO_ANSWER) from None
    if args.json:
        print(json.dumps(placement.to_dict()))
    else:
        print(render.placement_report(topo, placement))
    return 0


def _cmd_topology_publish(args: argparse.Namespace) -> int:
    from extender.cluster.state import ANNOTATION_FREE_GPUS, ANNOTATION_TOPOLOGY, FreeReport
    from extender.sources.kube import kube_api

    topo = _topology_from_args(args)
    annotations = {ANNOTATION_TOPOLOGY: topo.to_json()}
    if args.free is not None:
        unknown = sorted(set(args.free) - set(topo.indices))
        if unknown:
            raise CliError(f"--free names GPU {', '.join(map(str, unknown))}, not in the topology")
        annotations[ANNOTATION_FREE_GPUS] = FreeReport(tuple(sorted(args.free)), time.time()).to_json()
    try:
        api = kube_api(args.kubeconfig)
        api.patch_node(
            args.node, {"metadata": {"annotations": annotations}}, _content_type="application/merge-patch+json"
        )
    except Exception as exc:  # the client raises many kinds; the user needs the one line
        raise CliError(f"cannot annotate node {args.node}: {_kube_error(exc)}") from None
    print(f"node/{args.node} annotated: {', '.join(annotations)}")
    return 0


def _kube_error(exc: Exception) -> str:
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None)
    if status:
        body = getattr(exc, "body", None)
        try:
            message = json.loads(body).get("message") if body else None
        except (ValueError, AttributeError):
            message = None
        return f"API server answered {status} {reason}" + (f": {message}" if message else "")
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _cmd_serve(args: argparse.Namespace) -> int:
    from gpu_advisor.serve import ServeError, build_advisor, run

    try:
        advisor, background = build_advisor(
            args.cluster,
            args.prometheus,
            args.policy,
            args.kubeconfig,
            args.scrape_agents,
            require_telemetry=args.require_telemetry,
            telemetry_window_s=args.telemetry_window,
        )
    except ServeError as exc:
        raise CliError(str(exc)) from None
    from webhook.admission import AdmissionSettings

    try:
        return run(
            advisor,
            background,
            args.host,
            args.port,
            args.tls_cert,
            args.tls_key,
            args.tls_port,
            AdmissionSettings(route_gpu_pods_to=args.route_gpu_pods_to),
        )
    except ServeError as exc:
        raise CliError(str(exc)) from None


def _cmd_certs_create(args: argparse.Namespace) -> int:
    from webhook.certs import create_certs, service_dns_names

    try:
        files = create_certs(args.service, args.namespace, Path(args.out), reuse_ca=args.reuse_ca)
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot write certificates to {args.out}: {exc}") from None
    names = ", ".join(service_dns_names(args.service, args.namespace))
    print(f"wrote {files.ca_cert}, {files.cert}, {files.key} for {names}")
    return 0


def _cmd_certs_inject(args: argparse.Namespace) -> int:
    from kubernetes import client

    from extender.sources.kube import kube_api
    from webhook.certs import ca_bundle, inject_ca_bundle

    try:
        bundle = ca_bundle(Path(args.ca))
    except (OSError, ValueError) as exc:
        raise CliError(f"--ca {args.ca}: not a readable PEM certificate ({exc})") from None
    try:
        kube_api(args.kubeconfig)
        done = inject_ca_bundle(client.AdmissionregistrationV1Api(), args.config, bundle)
    except Exception as exc:  # the client raises many kinds; the user needs the one line
        raise CliError(f"cannot inject the CA bundle: {_kube_error(exc)}") from None
    if not done:
        raise CliError(f"no Mutating or Validating webhook configuration named {args.config}")
    print("caBundle set on " + ", ".join(done))
    return 0


def _load_cluster(cluster: str, kubeconfig: str | None) -> Any:
    """A Snapshot of the simulated cluster, a snapshot file, or the live cluster (one list, no watch)."""
    from extender.sources.snapshot import Snapshot, SnapshotError, load_snapshot, simulated_cluster

    if cluster == "simulated":
        return simulated_cluster()
    if cluster == "kube":
        from extender.sources.kube import kube_api, list_cluster

        try:
            nodes, pods = list_cluster(kube_api(kubeconfig))
        except Exception as exc:  # the client raises many kinds; the user needs the one line
            raise CliError(f"cannot list the cluster: {_kube_error(exc)}") from None
        return Snapshot(nodes, pods, {}, time.time())
    try:
        return load_snapshot(cluster)
    except SnapshotError as exc:
        raise CliError(str(exc)) from None


def _read_manifest(path: str) -> Any:
    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read {path}: {exc}") from None
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise CliError(f"{path}: not valid YAML or JSON: {where}{exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise CliError(f"{path}: not valid YAML or JSON: {exc}") from None
    if not docs:
        raise CliError(f"{path} holds no manifest")
    return docs[0]


def _telemetry(args: argparse.Namespace, snap: Any, state: Any, max_age_s: float, pod_key: str | None = None) -> Any:
    """The snapshot's readings, or one poll of ``--prometheus`` (with the pod's SM history for diagnose).
    A malformed URL is bad input; a Prometheus that does not answer only weakens the answer."""
    board = snap.telemetry(max_age_s)
    if not args.prometheus:
        return board
    from extender.sources.pod_index import directory_source
    from extender.sources.prometheus import PrometheusTelemetry, PrometheusUrlError

    try:
        source = PrometheusTelemetry(args.prometheus, board, where=directory_source(state, snap.pods))
    except PrometheusUrlError as exc:
        raise CliError(str(exc)) from None
    try:
        source.refresh_with_history(pod_key) if pod_key else source.refresh()
    except Exception as exc:  # a missing Prometheus weakens the answer; it does not stop it
        print(f"gpu-advisor: warning: no telemetry from {args.prometheus}: {exc}", file=sys.stderr)
    return board


def _cmd_explain(args: argparse.Namespace) -> int:
    from extender.advice import render
    from extender.advice.dryrun import DryRunError, dry_run
    from extender.scoring import ScoringPolicy
    from webhook.rules import advise_with_rules

    manifest = _read_manifest(args.manifest)
    snap = _load_cluster(args.cluster, args.kubeconfig)
    policy = ScoringPolicy()
    state = snap.cluster(args.cluster)
    telemetry = _telemetry(args, snap, state, policy.telemetry_max_age_s)
    try:
        answer = dry_run(manifest, state.nodes_by_name(), telemetry, policy, time.time(), None, advise_with_rules)
    except DryRunError as exc:
        raise CliError(f"{args.manifest}: {exc}") from None
    print(answer.model_dump_json(indent=2) if args.json else render.dry_run_report(answer))
    return 0 if answer.schedulable else EXIT_NO_ANSWER


def _cmd_diagnose(args: argparse.Namespace) -> int:
    from extender.advice import render
    from extender.advice.diagnose import diagnose
    from extender.scoring import ScoringPolicy

    snap = _load_cluster(args.cluster, args.kubeconfig)
    wanted = (args.namespace, args.pod)
    pod = next(
        (
            p
            for p in snap.pods
            if ((p.get("metadata") or {}).get("namespace"), (p.get("metadata") or {}).get("name")) == wanted
        ),
        None,
    )
    if pod is None:
        raise CliError(f"no GPU pod {args.namespace}/{args.pod} in {args.cluster}")
    policy = ScoringPolicy()
    state = snap.cluster(args.cluster)
    telemetry = _telemetry(args, snap, state, policy.telemetry_max_age_s, f"{args.namespace}/{args.pod}")
    result = diagnose(pod, state.nodes_by_name(), telemetry, policy, time.time())
    print(json.dumps(result.to_dict(), indent=2) if args.json else render.diagnosis_report(result))
    return 0


def _cmd_snapshot(args: argparse.Namespace) -> int:
    import yaml

    snap = _load_cluster(args.cluster, args.kubeconfig)
    doc = {"apiVersion": "v1", "kind": "List", "items": [*snap.nodes, *snap.pods]}
    print(yaml.safe_dump(doc, sort_keys=False), end="")
    return 0


def _cmd_agent(args: argparse.Namespace) -> int:
    import os
    import signal

    from extender.agent.loop import Agent, PodResourcesClient
    from extender.sources.kube import kube_api
    from extender.sources.nvml import load_nvml

    node = args.node or os.environ.get("NODE_NAME")
    if not node:
        raise CliError("name the node: --node NAME, or NODE_NAME from the downward API")
    try:
        api = kube_api(args.kubeconfig)
    except Exception as exc:  # the client raises many kinds; the user needs the one line
        raise CliError(f"cannot reach the API server: {_kube_error(exc)}") from None
    agent = Agent(node, api, lambda: PodResourcesClient(args.socket), load_nvml, min_interval_s=args.min_interval)
    server = agent.serve_http(args.host, args.port)
    signal.signal(signal.SIGTERM, lambda *_: agent.stop())
    try:
        agent.run(args.poll)
    except KeyboardInterrupt:
        pass
    finally:
        agent.stop()
        server.shutdown()
        server.server_close()
    return 0


def _add_topology_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", nargs="?", help="nvidia-smi topo -m text or a topology JSON document")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--nvml", action="store_true", help="read this machine's GPUs through NVML")
    src.add_argument("--example", metavar="NAME", help="a bundled machine, e.g. dgx1-v100, hgx-h100, l40s-pcie")


def _seconds_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 1 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{text} s: choose between 1 and 3600 seconds")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpu-advisor", description="Topology-aware GPU placement advice.")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    topology = commands.add_parser("topology", help="inspect GPU topologies").add_subparsers(
        dest="topology_command", required=True, metavar="SUBCOMMAND"
    )
    show = topology.add_parser("show", help="print the link matrix, NVLink islands and NUMA groups")
    _add_topology_source(show)
    show.add_argument("--json", action="store_true", help="print the topology JSON document")
    show.set_defaults(handler=_cmd_topology_show)

    best = topology.add_parser("best", help="the GPU set a request of K GPUs gets, and what it leaves behind")
    _add_topology_source(best)
    best.add_argument("--gpus", "-k", type=int, required=True, metavar="K", help="how many GPUs the pod asks for")
    best.add_argument("--free", type=_gpu_list, metavar="LIST", help="free GPU indices, e.g. 0,2,4,5 (default: all)")
    best.add_argument("--required", type=_gpu_list, metavar="LIST", help="GPUs that must be in the set")
    best.add_argument("--policy", choices=POLICIES, default="ideal", help="ideal (default) or nvidia-best-effort")
    best.add_argument("--json", action="store_true", help='print {"gpus": [...], "score": N, "leaves": {...}}')
    best.set_defaults(handler=_cmd_topology_best)

    publish = topology.add_parser("publish", help="write a topology (and free GPUs) to a Node's annotations")
    publish.add_argument("--node", required=True, help="the Node to annotate")
    _add_topology_source(publish)
    publish.add_argument("--free", type=_gpu_list, metavar="LIST", help="free GPU indices now, e.g. 0,1,4")
    publish.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    publish.set_defaults(handler=_cmd_topology_publish)

    serve = commands.add_parser("serve", help="run the scheduler extender (and webhook) over HTTP(S)")
    serve.add_argument(
        "--cluster",
        default="simulated",
        metavar="simulated|kube|FILE",
        help="the built-in simulated cluster (default), the live cluster, or a snapshot file",
    )
    serve.add_argument("--prometheus", metavar="URL", help="Prometheus with DCGM exporter series, for live telemetry")
    serve.add_argument(
        "--require-telemetry",
        action="store_true",
        help="exit (2) at start unless the telemetry source answers; later outages only make scores neutral",
    )
    serve.add_argument(
        "--telemetry-window",
        type=_seconds_arg,
        default=60.0,
        metavar="SECONDS",
        help="SM activity is averaged over this window (default 60)",
    )
    serve.add_argument(
        "--scrape-agents",
        action="store_true",
        help="read telemetry from the node agents' /metrics (no Prometheus needed; --cluster kube)",
    )
    serve.add_argument("--policy", metavar="FILE", help="scoring policy (YAML/JSON); refused at start if invalid")
    serve.add_argument(
        "--kubeconfig", help="kubeconfig file for --cluster kube (default: in-cluster, then ~/.kube/config)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    serve.add_argument("--tls-cert", metavar="FILE", help="serving certificate (PEM): also serve HTTPS on --tls-port")
    serve.add_argument("--tls-key", metavar="FILE", help="its private key (PEM); both are reloaded when renewed")
    serve.add_argument("--tls-port", type=int, default=8443, help="HTTPS port for the webhooks (default 8443)")
    serve.add_argument(
        "--route-gpu-pods-to",
        metavar="SCHEDULER",
        help="mutating webhook: set schedulerName of GPU Pods that chose none",
    )
    serve.set_defaults(handler=_cmd_serve)

    explain = commands.add_parser("explain", help="where would this pod or workload go, and why (or why not)?")
    explain.add_argument("manifest", metavar="MANIFEST", help="a Pod or workload manifest (YAML or JSON)")
    explain.add_argument(
        "--cluster",
        default="simulated",
        metavar="simulated|kube|FILE",
        help="the built-in simulated cluster (default), the live cluster, or a snapshot file",
    )
    explain.add_argument("--kubeconfig", help="kubeconfig file for --cluster kube")
    explain.add_argument("--prometheus", metavar="URL", help="Prometheus with DCGM exporter series: live headroom")
    explain.add_argument("--json", action="store_true", help="print the dry-run answer as JSON")
    explain.set_defaults(handler=_cmd_explain)

    diag = commands.add_parser(
        "diagnose", help="why is this GPU pod pending (or slow)? allocation → memory → placement → application"
    )
    diag.add_argument("pod", metavar="POD")
    diag.add_argument("-n", "--namespace", default="default")
    diag.add_argument("--cluster", default="kube", metavar="kube|FILE", help="the live cluster (default) or a snapshot")
    diag.add_argument("--kubeconfig", help="kubeconfig file for --cluster kube")
    diag.add_argument("--prometheus", metavar="URL", help="Prometheus with DCGM exporter series (SM history)")
    diag.add_argument("--json", action="store_true")
    diag.set_defaults(handler=_cmd_diagnose)

    snapshot = commands.add_parser("snapshot", help="print the cluster's GPU state as a snapshot file (YAML)")
    snapshot.add_argument("--cluster", default="kube", metavar="kube|simulated|FILE")
    snapshot.add_argument("--kubeconfig", help="kubeconfig file for --cluster kube")
    snapshot.set_defaults(handler=_cmd_snapshot)

    agent = commands.add_parser("agent", help="node agent: publish this node's GPU topology and free GPUs")
    agent.add_argument("--node", help="this Node's name (default: $NODE_NAME)")
    agent.add_argument(
        "--socket", default="/var/lib/kubelet/pod-resources/kubelet.sock", help="kubelet PodResources socket"
    )
    agent.add_argument("--min-interval", type=float, default=10.0, help="at most one Node write per this many seconds")
    agent.add_argument("--poll", type=float, default=2.0, help="seconds between looks at NVML and the kubelet")
    agent.add_argument("--host", default="0.0.0.0", help="address for /metrics, /healthz, /readyz")
    agent.add_argument("--port", type=int, default=9401, help="port for /metrics, /healthz, /readyz (default 9401)")
    agent.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster)")
    agent.set_defaults(handler=_cmd_agent)

    certs = commands.add_parser("certs", help="TLS for the admission webhook").add_subparsers(
        dest="certs_command", required=True, metavar="SUBCOMMAND"
    )
    create = certs.add_parser("create", help="a CA and a serving certificate for the webhook Service")
    create.add_argument("--service", default="gpu-advisor", help="Service name (default gpu-advisor)")
    create.add_argument("--namespace", default="gpu-advisor", help="its namespace (default gpu-advisor)")
    create.add_argument("--out", required=True, metavar="DIR", help="where to write ca.crt, tls.crt, tls.key")
    create.add_argument("--reuse-ca", action="store_true", help="renew the serving pair with the CA already in DIR")
    create.set_defaults(handler=_cmd_certs_create)
    inject = certs.add_parser("inject", help="put the CA bundle into the webhook configurations")
    inject.add_argument("--config", default="gpu-advisor", help="webhook configuration name (both kinds)")
    inject.add_argument("--ca", required=True, metavar="FILE", help="the CA certificate (ca.crt from certs create)")
    inject.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    inject.set_defaults(handler=_cmd_certs_inject)
    replay_cli.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s %(message)s")
    try:
        code: int = args.handler(args)
    except CliError as exc:
        print(f"gpu-advisor: error: {exc}", file=sys.stderr)
        return exc.code
    except TopologyError as exc:
        print(f"gpu-advisor: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":
    raise SystemExit(main())
