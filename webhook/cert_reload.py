"""A TLS listener's context whose certificate (and, for the extender port, trusted client CA) follows
the files on disk, so renewed certificates reach new connections without a restart."""

from __future__ import annotations

import logging
import ssl
import threading
from pathlib import Path

__all__ = ["CertReloader"]

log = logging.getLogger(__name__)


class CertReloader:
    """The listener's SSLContext, whose certificate follows the files: each handshake is handed the
    last *good* pair (through the SNI callback, called for every ClientHello). A renewed pair is loaded
    into a scratch context first and swapped in only when it loads; a bad one (a key that does not
    match, half-written files) leaves the previous pair serving. Checked every ``interval_s``.

    With ``client_ca``, a client must present a certificate that CA signed for client authentication, or
    the handshake fails and nothing is answered (the extender port: only kube-scheduler may call it);
    the CA file is followed like the pair."""

    def __init__(self, cert: Path, key: Path, interval_s: float = 30.0, client_ca: Path | None = None) -> None:
        self.cert, self.key, self.interval_s, self.client_ca = cert, key, interval_s, client_ca
        self._stamp: tuple[float, ...] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._current = self._load()  # raises on a bad first pair: the server does not start
        self._stamp = self._mtimes()
        self.context = self._load()
        self.context.sni_callback = self._hand_over

    def _mtimes(self) -> tuple[float, ...]:
        files = (self.cert, self.key) if self.client_ca is None else (self.cert, self.key, self.client_ca)
        return tuple(f.stat().st_mtime for f in files)

    def _load(self) -> ssl.SSLContext:
        if self.client_ca is None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        else:
            context = _requiring_client_cert(self.client_ca)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert, self.key)
        return context

    def _hand_over(self, connection: ssl.SSLObject | ssl.SSLSocket, _name: str | None, _ctx: ssl.SSLContext) -> None:
        connection.context = self._current

    def reload(self) -> bool:
        """Load the files if they changed; True when it did. A bad pair keeps the old one, logged."""
        stamp = self._mtimes()
        if stamp == self._stamp:
            return False
        try:
            fresh = self._load()
        except (ssl.SSLError, OSError) as exc:
            log.warning("renewed certificate %s not loaded (%s); still serving the previous one", self.cert, exc)
            return False
        self._current, self._stamp = fresh, stamp
        log.info("serving certificate loaded from %s", self.cert)
        return True

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.reload()
            except OSError as exc:
                log.warning("cannot check %s for renewal: %s", self.cert, exc)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="cert-reload", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()


def _requiring_client_cert(client_ca: Path) -> ssl.SSLContext:
    """A server context that requires a client certificate and trusts only ``client_ca`` for it (not the
    system's roots, which a certificate from any public CA chains to). OpenSSL checks the certificate's
    extended key usage against the client purpose, so a serving certificate of the same CA is refused."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cafile=str(client_ca))
    return context
