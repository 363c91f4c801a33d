"""An answer leaves in one write: what a response writes in one turn of the loop goes to the socket as one
(over TLS, one record and one segment for kube-scheduler's small answers, not one for the headers and one
for the body), and nothing is held past that turn or past a close."""

from __future__ import annotations

import asyncio
from typing import Any

from gpu_advisor.connections import CoalescedWrites


class Recorded:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = self.aborted = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def get_extra_info(self, name: str) -> Any:
        return f"info:{name}"


def test_the_status_line_headers_and_body_of_one_answer_go_out_as_one_write() -> None:
    async def answer() -> Recorded:
        inner = Recorded()
        out = CoalescedWrites(inner, asyncio.get_running_loop())
        out.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        out.write(b"{}")
        assert inner.writes == []  # held until the answer is complete
        out.flush()  # the protocol's on_response_complete
        return inner

    assert asyncio.run(answer()).writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]


def test_a_streamed_part_leaves_at_the_loops_next_turn_without_a_flush() -> None:
    async def stream() -> list[bytes]:
        inner = Recorded()
        out = CoalescedWrites(inner, asyncio.get_running_loop())
        out.write(b"part 1")
        await asyncio.sleep(0)  # the loop turns: the part has gone
        seen = list(inner.writes)
        out.write(b"part 2")
        await asyncio.sleep(0)
        return [*seen, b"|", *inner.writes]

    assert asyncio.run(stream()) == [b"part 1", b"|", b"part 1", b"part 2"]


def test_closing_sends_what_is_held_first_and_abort_drops_it() -> None:
    async def both() -> tuple[Recorded, Recorded]:
        loop = asyncio.get_running_loop()
        closed, aborted = Recorded(), Recorded()
        first, second = CoalescedWrites(closed, loop), CoalescedWrites(aborted, loop)
        first.write(b"bye")
        first.close()
        second.write(b"lost")
        second.abort()
        await asyncio.sleep(0)  # the scheduled flushes find nothing held
        return closed, aborted

    closed, aborted = asyncio.run(both())
    assert closed.writes == [b"bye"] and closed.closed
    assert aborted.writes == [] and aborted.aborted


def test_everything_else_is_the_wrapped_transports() -> None:
    loop = asyncio.new_event_loop()
    try:
        assert CoalescedWrites(Recorded(), loop).get_extra_info("peername") == "info:peername"
    finally:
        loop.close()


def test_the_served_protocol_writes_through_it_and_sends_each_answer_when_complete() -> None:
    from gpu_advisor.connections import deadline_protocol

    class Base(asyncio.Protocol):  # stands for uvicorn's protocol: it writes the answer in two parts
        def __init__(self) -> None:
            self.loop = asyncio.get_running_loop()
            self.cycle = None

        def connection_made(self, transport: Any) -> None:
            self.transport = transport

        def answer(self) -> None:
            self.transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
            self.transport.write(b"ok")
            self.on_response_complete()

        def on_response_complete(self) -> None:
            pass

    async def served() -> list[bytes]:
        inner = Recorded()
        inner.is_closing = lambda: False  # type: ignore[attr-defined]
        protocol = deadline_protocol(5.0, 5.0, base=Base)()
        protocol.connection_made(inner)
        protocol.answer()
        written = list(inner.writes)  # before the loop turns: sent by on_response_complete
        protocol.connection_lost(None)
        return written

    assert asyncio.run(served()) == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"]
