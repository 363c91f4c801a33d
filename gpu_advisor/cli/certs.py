"""``gpu-advisor certs create|inject``: TLS for the admission webhook."""

from __future__ import annotations

import argparse
from pathlib import Path

from gpu_advisor.cli.exits import CliError

__all__ = ["register"]


def _create(args: argparse.Namespace) -> int:
    from webhook.certs import create_certs, service_dns_names

    try:
        files = create_certs(args.service, args.namespace, Path(args.out), reuse_ca=args.reuse_ca)
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot write certificates to {args.out}: {exc}") from None
    names = ", ".join(service_dns_names(args.service, args.namespace))
    print(f"wrote {files.ca_cert}, {files.cert}, {files.key} for {names}")
    return 0


def _inject(args: argparse.Namespace) -> int:
    from kubernetes import client

    from extender.sources.kube import ApiServerError, api_error_message, kube_api
    from webhook.certs import ca_bundle, inject_ca_bundle

    try:
        bundle = ca_bundle(Path(args.ca))
    except (OSError, ValueError) as exc:
        raise CliError(f"--ca {args.ca}: not a readable PEM certificate ({exc})") from None
    try:
        kube_api(args.kubeconfig)
        done = inject_ca_bundle(client.AdmissionregistrationV1Api(), args.config, bundle)
    except Exception as exc:  # the client raises many kinds; the user needs the one line
        raise ApiServerError(f"cannot inject the CA bundle: {api_error_message(exc)}") from None
    if not done:
        raise CliError(f"no Mutating or Validating webhook configuration named {args.config}")
    print("caBundle set on " + ", ".join(done))
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    certs = commands.add_parser("certs", help="TLS for the admission webhook").add_subparsers(
        dest="certs_command", required=True, metavar="SUBCOMMAND"
    )
    create = certs.add_parser("create", help="a CA and a serving certificate for the webhook Service")
    create.add_argument("--service", default="gpu-advisor", help="Service name (default gpu-advisor)")
    create.add_argument("--namespace", default="gpu-advisor", help="its namespace (default gpu-advisor)")
    create.add_argument("--out", required=True, metavar="DIR", help="where to write ca.crt, tls.crt, tls.key")
    create.add_argument("--reuse-ca", action="store_true", help="renew the serving pair with the CA already in DIR")
    create.set_defaults(handler=_create)
    inject = certs.add_parser("inject", help="put the CA bundle into the webhook configurations")
    inject.add_argument("--config", default="gpu-advisor", help="webhook configuration name (both kinds)")
    inject.add_argument("--ca", required=True, metavar="FILE", help="the CA certificate (ca.crt from certs create)")
    inject.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    inject.set_defaults(handler=_inject)
