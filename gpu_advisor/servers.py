"""The uvicorn servers of ``serve``: their settings, the HTTPS ones with their certificate reloaders, each on
its bound socket, run together on the configured event loop."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path
from typing import Any

from extender.http.limits import Limits
from gpu_advisor.connections import deadline_protocol
from gpu_advisor.listeners import EXTENDER, PLAIN, PLAIN_WITHOUT_VERBS, WEBHOOKS, ExtenderPort, ServeError, listen

__all__ = ["KEEP_ALIVE_S", "LIMIT_CONCURRENCY", "build_servers", "serve_on_configured_loop", "uvicorn_config"]


LIMIT_CONCURRENCY = 512  # connections and requests at once per listener; past it, 503 at once
KEEP_ALIVE_S = 5


def uvicorn_config(app: Any, host: str, port: int, limits: Limits | None = None, **extra: Any) -> Any:
    """The server settings (benchmarks/wire.py runs its no-op under the very same ones).

    httptools parses HTTP when installed (``uvicorn[standard]``, a dependency). The protocol is
    wrapped with read deadlines (``connections``), and connections are limited per listener.
    """
    import uvicorn

    limits = limits or Limits()
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        # asyncio's own loop, not uvloop: with uvloop a CPU-bound judgement in the worker thread held
        # /healthz to a p99 of 232 ms under the worst dry-runs (more GIL hand-offs per request), against
        # < 100 ms here; the extender's warm path skips the framework instead (``scheduler``).
        loop="asyncio",
        http=deadline_protocol(limits.header_timeout_s, limits.body_timeout_s),
        log_level="info",
        access_log=False,
        ws="none",  # no listener serves WebSockets: the protocol and its library are never imported
        limit_concurrency=LIMIT_CONCURRENCY,
        timeout_keep_alive=KEEP_ALIVE_S,
        timeout_graceful_shutdown=10,
        **extra,
    )


def build_servers(
    edge: Any, host: str, ports: tuple[int, int], pair: tuple[str, str] | None, extender: ExtenderPort | None
) -> tuple[list[socket.socket], list[Any], tuple[str, ...], list[Any]]:
    """The bound sockets, their servers, what each serves (for the listening line) and the certificate
    reloaders to run beside them: plain HTTP on ``ports[0]``; with ``pair``, the webhooks' HTTPS on
    ``ports[1]``; with ``extender`` (its client CA), kube-scheduler's verbs on its HTTPS port."""
    import uvicorn

    from gpu_advisor.app import build_app

    port, tls_port = ports
    listeners = [listen(host, port)]
    servers = [uvicorn.Server(uvicorn_config(build_app(edge, "plain"), host, port, edge.limits))]
    roles = [PLAIN if edge.verbs_on_plain else PLAIN_WITHOUT_VERBS]
    reloaders: list[Any] = []
    if pair is not None:
        listeners.append(listen(host, tls_port))
        servers.append(_tls_server(build_app(edge, "tls"), host, tls_port, edge.limits, pair, reloaders))
        roles.append(WEBHOOKS)
        if extender is not None and extender.client_ca:
            listeners.append(listen(host, extender.port))
            app = build_app(edge, "scheduler")
            servers.append(_tls_server(app, host, extender.port, edge.limits, pair, reloaders, extender.client_ca))
            roles.append(EXTENDER)
    return listeners, servers, tuple(roles), reloaders


def _tls_server(
    app: Any,
    host: str,
    port: int,
    limits: Limits,
    pair: tuple[str, str],
    reloaders: list[Any],
    client_ca: str | None = None,
) -> Any:
    """An HTTPS server (the webhooks'; with ``client_ca``, the extender's, which requires a client
    certificate that CA signed); its certificate reloader runs in the background."""
    import uvicorn

    from webhook.certs import CertReloader

    cert, key = pair
    try:
        reloader = CertReloader(Path(cert), Path(key), client_ca=Path(client_ca) if client_ca else None)
    except (OSError, ssl.SSLError) as exc:
        which = "--tls-cert/--tls-key" + (f" or --scheduler-client-ca {client_ca}" if client_ca else "")
        raise ServeError(f"cannot load {which}: {exc}") from None
    config = uvicorn_config(app, host, port, limits, ssl_certfile=cert, ssl_keyfile=key)
    config.load()
    config.ssl = reloader.context  # renewed files reach new connections without a restart
    reloaders.append(reloader)
    return uvicorn.Server(config)


def serve_on_configured_loop(servers: list[Any], sockets: list[socket.socket] | None = None) -> None:
    """Run uvicorn servers together (each on its bound socket, if given) on the event loop their config
    names. A bare ``asyncio.run`` would always take asyncio's own loop: only ``uvicorn.run`` applies
    the config's loop, and several listeners cannot share one ``uvicorn.run``."""
    import asyncio

    async def serve_all() -> None:
        if sockets is None:
            await asyncio.gather(*(server.serve() for server in servers))
        else:
            await asyncio.gather(*(server.serve(sockets=[s]) for server, s in zip(servers, sockets, strict=True)))

    with asyncio.Runner(loop_factory=servers[0].config.get_loop_factory()) as runner:
        runner.run(serve_all())
