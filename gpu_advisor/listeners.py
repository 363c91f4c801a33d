"""The sockets ``serve`` listens on: bound before anything is served, and named in one log line."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any

from extender.errors import UsageError

__all__ = [
    "EXTENDER",
    "PLAIN",
    "PLAIN_WITHOUT_VERBS",
    "WEBHOOKS",
    "ExtenderPort",
    "ServeError",
    "listen",
    "listening_line",
]


class ServeError(UsageError):
    """The server cannot start as asked; the message says why."""


@dataclass(frozen=True)
class ExtenderPort:
    """Where kube-scheduler's verbs are served: with ``client_ca``, on ``port`` over HTTPS to a client
    certificate that CA signed; without, on the plain port."""

    port: int = 8444
    client_ca: str | None = None


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything is served: a taken port is one line and exit 2, where
    uvicorn would bind late and, with two listeners, end in a page of tracebacks."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not left 0 as socket.create_server leaves it: asyncio turns Nagle off only on
    # sockets whose protocol says TCP, and with Nagle on a reply written in two parts (headers, body)
    # waits for the client's delayed ACK: 40 ms per call on a kept-alive connection (measured).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(2048)
        return sock
    except OSError as exc:
        sock.close()
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        raise ServeError(f"cannot listen on {host}:{port}: {why}") from None


PLAIN = "extender, /v1, console, health, metrics"
PLAIN_WITHOUT_VERBS = "/v1, console, health, metrics"
WEBHOOKS = "admission webhooks, health"
EXTENDER = "extender verbs to kube-scheduler's client certificate, health"


def listening_line(addresses: list[tuple[Any, ...]], roles: tuple[str, ...] = (PLAIN, WEBHOOKS)) -> str:
    """``gpu-advisor listening on http://127.0.0.1:8080 (...) and https://...``: every bound address and what
    it serves, in one line (the first is the plain port; the others HTTPS: the webhooks', the extender's)."""
    said = []
    schemes = ("http", *("https",) * (len(roles) - 1))
    for (host, port, *_), scheme, role in zip(addresses, schemes, roles, strict=False):
        shown = f"[{host}]" if ":" in str(host) else str(host)
        everywhere = " (all addresses)" if host in ("0.0.0.0", "::") else ""
        said.append(f"{scheme}://{shown}:{port}{everywhere} ({role})")
    return "gpu-advisor listening on " + " and ".join(said)
