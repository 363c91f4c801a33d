"""One kind of write to the API server made on the event loop: a request on a kept-alive HTTP/1.1
connection, with the kubernetes client's own server, TLS settings and credentials.

The bind verb posts one Binding per pod. Through the client's connection pool in a worker thread that
was a third of the advisor's CPU per pod at 1,000 nodes: the hop to the thread and back, urllib3's
layers, and ``http.client`` reading the answer's headers with the e-mail parser. Here the request is
written and the answer read on the loop: a status line, headers, a body by length or in chunks.

The TLS context is built as urllib3 builds it from the same configuration (the CA file, a client
certificate, ``verify_ssl``, ``tls_server_name``). A configuration this does not cover (a proxy, a
server URL that is not http or https) gets no writer: the caller keeps the client's own path.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import Any
from urllib.parse import urlsplit

__all__ = ["ApiWrites", "WriteFailed"]

_CHUNK_LINE = 1 << 10
_MAX_HEADERS = 1 << 16


class WriteFailed(Exception):
    """The request got no answer (connection refused or lost, a timeout, an answer that is not HTTP)."""


class ApiWrites:
    def __init__(
        self, host: str, port: int, tls: ssl.SSLContext | None, server_hostname: str | None, prefix: str = ""
    ) -> None:
        self.host, self.port, self.tls, self.server_hostname = host, port, tls, server_hostname
        self.prefix = prefix  # the server URL's own path (an API server behind a path), before every request's
        self._idle: list[tuple[asyncio.AbstractEventLoop, asyncio.StreamReader, asyncio.StreamWriter]] = []

    @classmethod
    def of(cls, configuration: Any) -> ApiWrites | None:
        """A writer for the client's configuration; None when it names a proxy or a scheme not foreseen."""
        url = urlsplit(str(configuration.host))
        if getattr(configuration, "proxy", None) or url.scheme not in ("http", "https") or not url.hostname:
            return None
        prefix = url.path.rstrip("/")
        if url.scheme == "http":
            return cls(url.hostname, url.port or 80, None, None, prefix)
        context = ssl.create_default_context(cafile=configuration.ssl_ca_cert or None)
        if configuration.cert_file:
            context.load_cert_chain(configuration.cert_file, configuration.key_file or None)
        if not configuration.verify_ssl:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif configuration.assert_hostname is False:
            context.check_hostname = False
        name = getattr(configuration, "tls_server_name", None) or url.hostname
        return cls(url.hostname, url.port or 443, context, name, prefix)

    async def send(
        self, method: str, path: str, body: bytes, headers: dict[str, str], timeout_s: float
    ) -> tuple[int, str, bytes]:
        """(status, reason, body). A kept-alive connection the server has closed meanwhile is tried once
        more on a new one, only when no byte of an answer came back."""
        loop = asyncio.get_running_loop()
        head = f"{method} {self.prefix}{path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
        head += f"Content-Length: {len(body)}\r\n"
        request = (head + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode("latin-1") + body
        async with asyncio.timeout(timeout_s):
            while self._idle:
                owner, reader, writer = self._idle.pop()
                if owner is not loop:  # kept on a loop that has ended (tests run one loop after another)
                    if not owner.is_closed():
                        owner.call_soon_threadsafe(writer.close)
                    continue
                if writer.is_closing():
                    continue
                try:
                    return await self._exchange(loop, reader, writer, request)
                except _Stale:
                    continue
            reader, writer = await self._open()
            try:
                return await self._exchange(loop, reader, writer, request)
            except _Stale as exc:
                raise WriteFailed("the API server closed the connection without an answer") from exc

    async def aclose(self) -> None:
        """Close the connections kept on the running loop (the app shuts down)."""
        loop = asyncio.get_running_loop()
        mine = [writer for owner, _, writer in self._idle if owner is loop]
        self._idle = [kept for kept in self._idle if kept[0] is not loop]
        for writer in mine:
            writer.close()
        for writer in mine:
            with contextlib.suppress(OSError, ssl.SSLError):
                await writer.wait_closed()

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            return await asyncio.open_connection(
                self.host, self.port, ssl=self.tls, server_hostname=self.server_hostname if self.tls else None
            )
        except (OSError, ssl.SSLError) as exc:
            raise WriteFailed(f"cannot reach the API server at {self.host}:{self.port}: {exc}") from exc

    async def _exchange(
        self,
        loop: asyncio.AbstractEventLoop,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        request: bytes,
    ) -> tuple[int, str, bytes]:
        try:
            writer.write(request)
            await writer.drain()
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as exc:
                if not exc.partial:
                    raise _Stale() from exc
                raise
            status, reason, fields = _head(head)
            body = await _body(reader, fields)
        except _Stale:
            writer.close()
            raise
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            writer.close()
            raise WriteFailed(f"the API server's answer could not be read: {exc}") from exc
        except BaseException:  # cancelled (the timeout): the connection is mid-answer, never reused
            writer.close()
            raise
        if fields.get("connection", "").lower() == "close":
            writer.close()
        else:
            self._idle.append((loop, reader, writer))
        return status, reason, body


class _Stale(Exception):
    """A kept-alive connection closed before any byte of the answer: the request may be sent again."""


def _head(raw: bytes) -> tuple[int, str, dict[str, str]]:
    """The status line and the header fields (names lower-cased; a repeated field's last value)."""
    if len(raw) > _MAX_HEADERS:
        raise ValueError("headers over 64 KiB")
    lines = raw.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise ValueError(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
    fields = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            fields[name.strip().lower()] = value.strip()
    return int(code), reason, fields


async def _body(reader: asyncio.StreamReader, fields: dict[str, str]) -> bytes:
    if "chunked" in fields.get("transfer-encoding", "").lower():
        parts: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n"))[:_CHUNK_LINE].split(b";")[0].strip(), 16)
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailer fields, then the blank line
                    pass
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
    if "content-length" not in fields:  # an answer that ends with the connection (never kept)
        fields["connection"] = "close"
        return await reader.read(-1)  # to the end; the caller's timeout bounds it
    return await reader.readexactly(int(fields["content-length"]))
