"""The listening socket serve binds itself: a TCP socket asyncio turns Nagle off on, and a port in use
is one clear error."""

from __future__ import annotations

import http.client
import socket
import threading
import time

import pytest

from gpu_advisor.serve import ServeError, listen


def test_the_socket_says_tcp_so_replies_written_in_two_parts_do_not_wait_for_a_delayed_ack() -> None:
    with listen("127.0.0.1", 0) as sock:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1


def test_a_port_in_use_is_one_line_naming_it() -> None:
    with listen("127.0.0.1", 0) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(ServeError, match=f"cannot listen on 127.0.0.1:{port}: Address already in use"):
            listen("127.0.0.1", port)


def test_kept_alive_calls_with_two_part_replies_take_no_delayed_ack_each() -> None:
    """Twenty calls on one connection to a server on this socket (headers and body sent apart, as
    uvicorn does): with Nagle on, each waits ~40 ms for the client's delayed ACK; 0.4 s is 20 ms each."""
    import asyncio

    server = listen("127.0.0.1", 0)
    port = server.getsockname()[1]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.readuntil(b"\r\n\r\n"):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
            await writer.drain()
            writer.write(b"ok")
            await writer.drain()

    def serve() -> None:
        async def main() -> None:
            srv = await asyncio.start_server(handle, sock=server)
            async with srv:
                await asyncio.sleep(3)

        asyncio.run(main())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    time.sleep(0.2)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    started = time.perf_counter()
    for _ in range(20):
        conn.request("GET", "/")
        assert conn.getresponse().read() == b"ok"
    took = time.perf_counter() - started
    conn.close()
    assert took < 0.4, f"20 kept-alive calls took {took:.2f} s"
