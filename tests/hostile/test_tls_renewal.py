"""TLS renewal never breaks serving: a renewed pair that does not load (a key of another pair) leaves
the previous certificate serving, checked by real handshakes; keys are written 0600 from the first
byte, in a 0700 directory, and never through a planted symlink."""

from __future__ import annotations

import os
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.webhook.test_certs import handshake_serial, load
from webhook.certs import CertReloader, create_certs


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[CertReloader, int]]:
    files = create_certs("svc", "ns", tmp_path / "live")
    reloader = CertReloader(files.cert, files.key, interval_s=3600)
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                with reloader.context.wrap_socket(conn, server_side=True):
                    pass
            except (ssl.SSLError, OSError):
                pass

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield reloader, listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()


def test_a_mismatched_renewal_keeps_serving_the_previous_certificate(
    served: tuple[CertReloader, int], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    reloader, port = served
    live = tmp_path / "live"
    before = handshake_serial(port, live / "ca.crt")
    other = create_certs("svc", "ns", tmp_path / "other")
    # The renewal lands with the key of another pair: the certificate no longer matches its key.
    (live / "tls.key").write_bytes(other.key.read_bytes())
    os.utime(live / "tls.key", (1, 1))
    assert reloader.reload() is False and "still serving the previous one" in caplog.text
    assert handshake_serial(port, live / "ca.crt") == before, "handshakes still get the previous certificate"
    # The matching key arrives: the new pair is served from the next handshake on.
    renewed = create_certs("svc", "ns", live, reuse_ca=True)
    assert reloader.reload() is True
    assert handshake_serial(port, live / "ca.crt") == load(renewed.cert).serial_number != before


def test_keys_are_0600_and_the_directory_0700(tmp_path: Path) -> None:
    files = create_certs("svc", "ns", tmp_path / "certs")
    assert (tmp_path / "certs").stat().st_mode & 0o777 == 0o700
    assert files.key.stat().st_mode & 0o777 == 0o600 and files.ca_key.stat().st_mode & 0o777 == 0o600
    assert files.client_key.stat().st_mode & 0o777 == 0o600
    assert files.cert.stat().st_mode & 0o777 == 0o644 and files.client_cert.stat().st_mode & 0o777 == 0o644
    written = sorted(p.name for p in (tmp_path / "certs").iterdir())
    assert written == ["ca.crt", "ca.key", "scheduler.crt", "scheduler.key", "tls.crt", "tls.key"]


def test_an_existing_output_directory_is_tightened_to_0700(tmp_path: Path) -> None:
    out = tmp_path / "open"
    out.mkdir(mode=0o755)
    create_certs("svc", "ns", out)
    assert out.stat().st_mode & 0o777 == 0o700


def test_a_symlink_planted_at_the_temporary_name_is_refused_not_followed(tmp_path: Path) -> None:
    out = tmp_path / "certs"
    out.mkdir(mode=0o700)
    target = tmp_path / "stolen"
    (out / f".ca.key.{os.getpid()}.tmp").symlink_to(target)
    with pytest.raises(FileExistsError):
        create_certs("svc", "ns", out)
    assert not target.exists(), "no key was written through the link"
