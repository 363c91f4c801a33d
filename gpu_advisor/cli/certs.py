"""``gpu-advisor certs create|check|inject|ensure``: TLS for the admission webhooks and the extender port
(a serving pair for the Service, and kube-scheduler's client pair, from one CA).

``create`` and ``inject`` are the by-hand path (files, then the caBundle); ``ensure`` is what the
install's Job and CronJob run (a Secret, renewed when due, and the caBundle); ``check`` says when the
files expire, and exits 1 when one is inside the renewal window, like ``openssl x509 -checkend``.
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

from gpu_advisor.cli.exits import CliError

__all__ = ["register"]

EXIT_DUE = 1


def _create(args: argparse.Namespace) -> int:
    from webhook.certs import CertError, create_certs, service_dns_names

    try:
        files = create_certs(args.service, args.namespace, Path(args.out), reuse_ca=args.reuse_ca, force=args.force)
    except CertError as exc:
        raise CliError(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot write certificates to {args.out}: {exc}") from None
    names = ", ".join(service_dns_names(args.service, args.namespace))
    print(f"wrote {files.ca_cert}, {files.cert}, {files.key} for {names}")
    print(f"wrote {files.client_cert}, {files.client_key} for kube-scheduler (its extender tlsConfig)")
    return 0


def _check(args: argparse.Namespace) -> int:
    from webhook.cert_expiry import read_expiry

    now = dt.datetime.now(dt.UTC)
    within = dt.timedelta(days=args.within)
    due = False
    # kube-scheduler's client pair, where the directory has one (written by `create` since it was added).
    client = ("scheduler.crt",) if (Path(args.dir) / "scheduler.crt").exists() else ()
    for name in ("ca.crt", "tls.crt", *client):
        path = Path(args.dir) / name
        try:
            expiry = read_expiry(name, path.read_bytes())
        except (OSError, ValueError) as exc:
            raise CliError(f"{path}: not a readable PEM certificate ({exc})") from None
        print(expiry.line(now))
        due = due or expiry.due(now, within)
    if due:
        print(f"due for renewal (within {args.within} days): gpu-advisor certs create --reuse-ca --out {args.dir}")
        return EXIT_DUE
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


def _ensure(args: argparse.Namespace) -> int:
    from kubernetes import client

    from extender.sources.kube import ApiServerError, api_error_message, kube_api
    from webhook.cert_secret import ensure_secret
    from webhook.certs import CertError

    try:
        core = kube_api(args.kubeconfig)
        done = ensure_secret(
            core, client.AdmissionregistrationV1Api(), args.secret, args.namespace, args.service, args.config
        )
    except CertError as exc:
        raise CliError(str(exc)) from None
    except Exception as exc:  # the client raises many kinds; the user needs the one line
        raise ApiServerError(f"cannot keep the webhook certificate: {api_error_message(exc)}") from None
    print("\n".join(done))
    return 0


def _service_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--service", default="gpu-advisor", help="Service name (default gpu-advisor)")
    parser.add_argument("--namespace", default="gpu-advisor", help="its namespace (default gpu-advisor)")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    certs = commands.add_parser("certs", help="TLS for the admission webhook").add_subparsers(
        dest="certs_command", required=True, metavar="SUBCOMMAND"
    )
    create = certs.add_parser(
        "create", help="a CA, a serving certificate for the Service and kube-scheduler's client certificate"
    )
    _service_options(create)
    create.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="where to write ca.crt, tls.crt, tls.key, scheduler.crt, scheduler.key",
    )
    create.add_argument("--reuse-ca", action="store_true", help="renew the serving pair with the CA already in DIR")
    create.add_argument("--force", action="store_true", help="replace a CA already in DIR (re-inject the caBundle)")
    create.set_defaults(handler=_create)

    check = certs.add_parser("check", help="when ca.crt and tls.crt expire; exit 1 when one is due for renewal")
    check.add_argument("dir", metavar="DIR", help="the directory certs create wrote")
    check.add_argument("--within", type=int, default=30, metavar="DAYS", help="due when this close (default 30)")
    check.set_defaults(handler=_check)

    inject = certs.add_parser("inject", help="put the CA bundle into the webhook configurations")
    inject.add_argument(
        "--config", default="gpu-advisor", help="webhook configuration name, both kinds (default gpu-advisor)"
    )
    inject.add_argument("--ca", required=True, metavar="FILE", help="the CA certificate (ca.crt from certs create)")
    inject.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    inject.set_defaults(handler=_inject)

    ensure = certs.add_parser(
        "ensure", help="in-cluster: keep the certificates in a Secret, renew when due, and inject the caBundle"
    )
    _service_options(ensure)
    ensure.add_argument("--secret", default="gpu-advisor-tls", help="the Secret (default gpu-advisor-tls)")
    ensure.add_argument(
        "--config", default="gpu-advisor", help="webhook configuration name, both kinds (default gpu-advisor)"
    )
    ensure.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    ensure.set_defaults(handler=_ensure)
