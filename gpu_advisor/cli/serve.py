"""``gpu-advisor serve``: the scheduler extender, the /v1 API and the admission webhook over HTTP(S)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from webhook.reach import AdvisorReach

__all__ = ["load_reach", "register"]


def load_reach(paths: list[str], route_to: str | None) -> AdvisorReach | None:
    """The schedulers that call the advisor, from ``--scheduler-config`` files (None: none given, the printed
    default). Every problem of every file in one error, before anything starts."""
    import yaml

    from extender.errors import InputError
    from webhook.reach import AdvisorReach

    if not paths:
        return None
    docs: list[tuple[str, object]] = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                docs += [(path, doc) for doc in yaml.safe_load_all(handle) if doc is not None]
        except OSError as exc:
            raise InputError(f"--scheduler-config {path}: {exc.strerror or exc}") from None
        except yaml.YAMLError as exc:
            raise InputError(f"--scheduler-config {path} is not YAML: {exc}") from None
    reach = AdvisorReach.from_configs(docs)
    if route_to and route_to not in reach.schedulers:
        raise InputError(
            f"--route-gpu-pods-to {route_to}: no profile of --scheduler-config by that name calls the advisor "
            f"({', '.join(sorted(reach.schedulers))} do)"
        )
    return reach


def _serve(args: argparse.Namespace) -> int:
    from extender.http.limits import Limits
    from gpu_advisor.cli.extender_port import extender_port
    from gpu_advisor.drain import DRAIN_S
    from gpu_advisor.serve import build_advisor, run
    from webhook.admission import AdmissionSettings

    reach = load_reach(args.scheduler_config or [], args.route_gpu_pods_to)  # refused before anything starts
    advisor, background = build_advisor(
        args.cluster,
        args.prometheus,
        args.policy,
        args.kubeconfig,
        args.scrape_agents,
        require_telemetry=args.require_telemetry,
        telemetry_window_s=args.telemetry_window,
        usage_refresh_s=args.usage_refresh,
        usage_by=args.usage_by,
        claims_namespace=args.claims_namespace,
    )
    admission = AdmissionSettings(route_gpu_pods_to=args.route_gpu_pods_to, reach=reach)
    auth = None
    if args.api_auth or args.api_access_review:
        from extender.http.auth import TokenCheck, kube_access_review, kube_token_review

        access = kube_access_review(args.kubeconfig) if args.api_access_review else None
        groups = tuple(args.api_allow_group or ["system:authenticated"])
        auth = TokenCheck(kube_token_review(args.kubeconfig), groups, access=access)
    limits = Limits(
        header_timeout_s=args.header_timeout, body_timeout_s=args.body_timeout, dry_run_seconds=args.dry_run_seconds
    )
    drain_s = args.drain_seconds if args.drain_seconds is not None else (DRAIN_S if args.cluster == "kube" else 0.0)
    extender = extender_port(args, advisor)
    return run(
        advisor,
        background,
        args.host,
        args.port,
        args.tls_cert,
        args.tls_key,
        args.tls_port,
        admission,
        auth,
        limits,
        drain_s=drain_s,
        extender=extender,
    )


def _seconds_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 1 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{text} s: choose between 1 and 3600 seconds")
    return value


def _drain_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value <= 60:
        raise argparse.ArgumentTypeError(f"{text} s: choose between 0 and 60 seconds")
    return value


def _refresh_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value != 0 and not 10 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"{text} s: choose 0 (off) or between 10 and 86400 seconds")
    return value


def _limits(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--header-timeout",
        type=_seconds_arg,
        default=10.0,
        metavar="SECONDS",
        help="close a connection that has not sent a request's headers within this (default 10)",
    )
    serve.add_argument(
        "--body-timeout",
        type=_seconds_arg,
        default=30.0,
        metavar="SECONDS",
        help="answer 408 and close when a request's body has not arrived within this (default 30)",
    )
    serve.add_argument(
        "--dry-run-seconds",
        type=_seconds_arg,
        default=10.0,
        metavar="SECONDS",
        help="time budget of a dry-run against a snapshot; past it the dry-run is stopped (default 10)",
    )


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from gpu_advisor.cli.extender_port import extender_port_options

    serve = commands.add_parser("serve", help="run the scheduler extender (and webhook) over HTTP(S)")
    serve.add_argument(
        "--cluster",
        default="simulated",
        metavar="simulated|kube|FILE",
        help="the built-in simulated cluster (default; simulated-rack: beside an NVL72 rack), the live cluster, "
        "or a snapshot file",
    )
    _telemetry_options(serve)
    serve.add_argument("--policy", metavar="FILE", help="scoring policy (YAML/JSON); refused at start if invalid")
    serve.add_argument(
        "--kubeconfig", help="kubeconfig file for --cluster kube (default: in-cluster, then ~/.kube/config)"
    )
    serve.add_argument(
        "--claims-namespace",
        metavar="NAMESPACE",
        help="--cluster kube: where the bind verb keeps each node's claims Lease, shared by every replica "
        "(default: the pod's own namespace, else gpu-advisor)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    serve.add_argument("--tls-cert", metavar="FILE", help="serving certificate (PEM): also serve HTTPS on --tls-port")
    serve.add_argument("--tls-key", metavar="FILE", help="its private key (PEM); both are reloaded when renewed")
    serve.add_argument("--tls-port", type=int, default=8443, help="HTTPS port for the webhooks (default 8443)")
    extender_port_options(serve)
    _scheduler_options(serve)
    serve.add_argument(
        "--api-auth",
        action="store_true",
        help="/v1 asks for a bearer token, checked with the API server (TokenReview): 401/403 without one",
    )
    serve.add_argument(
        "--api-allow-group",
        action="append",
        metavar="GROUP",
        help="with --api-auth: a group whose users may use /v1 (repeatable; default system:authenticated)",
    )
    serve.add_argument(
        "--api-access-review",
        action="store_true",
        help="implies --api-auth: authorize each /v1 request by a SubjectAccessReview of its path and verb (RBAC "
        "nonResourceURLs, as kube-rbac-proxy does) instead of --api-allow-group",
    )
    _limits(serve)
    serve.set_defaults(handler=_serve)


def _scheduler_options(serve: argparse.ArgumentParser) -> None:
    """Which schedulers bring pods to the advisor, and where admission sends GPU pods."""
    serve.add_argument(
        "--route-gpu-pods-to",
        metavar="SCHEDULER",
        help="mutating webhook: set schedulerName of GPU Pods that chose none",
    )
    serve.add_argument(
        "--scheduler-config",
        action="append",
        metavar="FILE",
        help="a KubeSchedulerConfiguration that calls the advisor (repeatable, one per scheduler): admission "
        "warns (enforce: denies) GPU pods whose scheduler, or its extender's managedResources, will not ask the "
        "advisor. Default: the `scheduler-config` profile gpu-advisor, asked about every pod",
    )


def _telemetry_options(serve: argparse.ArgumentParser) -> None:
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
        "--usage-refresh",
        type=_refresh_arg,
        default=900.0,
        metavar="SECONDS",
        help="with --prometheus: refresh the per-tenant usage gauges (30 days) this often in the background "
        "(default 900; 0: only when GET /v1/usage is asked)",
    )
    serve.add_argument(
        "--usage-by",
        default="namespace",
        metavar="namespace|label:KEY|workload",
        help="the tenants of the refreshed usage gauges (default namespace)",
    )
    serve.add_argument(
        "--drain-seconds",
        type=_drain_arg,
        metavar="S",
        help="on SIGTERM, keep answering this long while not ready, closing each connection after its answer,"
        " so callers move to another replica (default 5 with --cluster kube, else 0)",
    )
    serve.add_argument(
        "--scrape-agents",
        action="store_true",
        help="read telemetry from the node agents' /metrics (no Prometheus needed; --cluster kube)",
    )
