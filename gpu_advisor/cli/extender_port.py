"""``serve``'s extender port: where kube-scheduler's verbs are served, and to whom (its flags and their check)."""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI parser imports this module: the agent's process must not load these
    from extender.http.advisor import Advisor
    from gpu_advisor.listeners import ExtenderPort

__all__ = ["extender_port", "extender_port_options"]


def extender_port(args: argparse.Namespace, advisor: Advisor) -> ExtenderPort:
    """Where kube-scheduler's verbs are served. On a live cluster they bind pods, so only to a client
    certificate, unless the operator says otherwise in so many words (logged, and a gauge says so)."""
    from prometheus_client import Gauge

    from gpu_advisor.listeners import ExtenderPort, ServeError

    if args.scheduler_client_ca and args.insecure_scheduler_verbs:
        raise ServeError("choose one: --scheduler-client-ca or --insecure-scheduler-verbs")
    if args.cluster == "kube" and not args.scheduler_client_ca:
        if not args.insecure_scheduler_verbs:
            raise ServeError(
                "--cluster kube: the extender verbs bind pods, so they are served only to kube-scheduler's client "
                "certificate: give --scheduler-client-ca ca.crt with --tls-cert/--tls-key (`gpu-advisor certs create` "
                "writes them, and kube-scheduler's scheduler.crt/.key), or --insecure-scheduler-verbs to serve them on "
                "the plain port to anyone who reaches it"
            )
        logging.getLogger(__name__).warning(
            "--insecure-scheduler-verbs: /scheduler/filter, prioritize and bind (which binds pods) are served on the "
            "plain port %s to anyone who reaches it",
            args.port,
        )
        unauthenticated = Gauge(
            "gpu_advisor_extender_unauthenticated",
            "1 when the extender verbs, which bind pods, are served without a client certificate",
            registry=advisor.registry,
        )
        unauthenticated.set(1)
    advisor.filter_passes = args.filter_passes
    return ExtenderPort(args.scheduler_port, args.scheduler_client_ca)


def extender_port_options(serve: argparse.ArgumentParser) -> None:
    """Where kube-scheduler's verbs are served, and to whom."""
    serve.add_argument(
        "--scheduler-client-ca",
        metavar="FILE",
        help="serve kube-scheduler's verbs (/scheduler/*) only on --scheduler-port, over HTTPS, to a client "
        "certificate this CA signed (ca.crt of `certs create`; needed with --cluster kube)",
    )
    serve.add_argument(
        "--scheduler-port", type=int, default=8444, help="HTTPS port of the extender verbs (default 8444)"
    )
    serve.add_argument(
        "--insecure-scheduler-verbs",
        action="store_true",
        help="with --cluster kube and no --scheduler-client-ca: serve the verbs, which bind pods, on the plain port "
        "to anyone who reaches it (logged; gauge gpu_advisor_extender_unauthenticated)",
    )
    serve.add_argument(
        "--filter-passes",
        choices=("best", "fitting"),  # extender.http.best_node.FILTER_PASSES (not imported: the agent's CLI)
        default="best",
        help="the nodes the filter passes for a pod the advisor ranks: its best node only (default: kube-scheduler "
        "then binds it without scoring, as the printed profile's weight would), or every node that fits (for a "
        "profile whose own score plugins are to weigh in, e.g. a lowered extender weight)",
    )
