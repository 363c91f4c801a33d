"""Where the API server is and how the agent shows who it is: what both ways of finding it produce (a pod's
ServiceAccount in ``apiserver``, a kubeconfig in ``kubeconfig``), kept apart so neither imports the other."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ApiTarget", "token_file"]


def token_file(path: Path) -> Callable[[], str]:
    """The token as the file holds it now: the kubelet rotates ServiceAccount tokens in place."""
    return lambda: path.read_text().strip()


@dataclass(frozen=True)
class ApiTarget:
    """Where the API server is and how to show who we are."""

    url: str  # scheme://host:port[/path prefix]
    tls: ssl.SSLContext | None = None  # None: the system trust store, no client certificate
    bearer: Callable[[], str] | None = None
    basic: tuple[str, str] | None = None  # (user, password)
