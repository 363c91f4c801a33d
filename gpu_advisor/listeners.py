"""The sockets ``serve`` listens on: bound before anything is served, and named in one log line."""

from __future__ import annotations

import os
import socket
from typing import Any

from extender.errors import UsageError

__all__ = ["ServeError", "listen", "listening_line"]


class ServeError(UsageError):
    """The server cannot start as asked; the message says why."""


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


def listening_line(addresses: list[tuple[Any, ...]]) -> str:
    """``gpu-advisor listening on http://127.0.0.1:8080 (...) and https://...``: every bound address and what
    it serves, in one line (the first is the plain port, the second, if any, the webhooks' TLS port)."""
    roles = ("extender, /v1, console, health, metrics", "admission webhooks, health")
    said = []
    for (host, port, *_), scheme, role in zip(addresses, ("http", "https"), roles, strict=False):
        shown = f"[{host}]" if ":" in str(host) else str(host)
        everywhere = " (all addresses)" if host in ("0.0.0.0", "::") else ""
        said.append(f"{scheme}://{shown}:{port}{everywhere} ({role})")
    return "gpu-advisor listening on " + " and ".join(said)
