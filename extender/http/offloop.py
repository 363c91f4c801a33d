"""Judging off the event loop: one judgement at a time (the verdict memo and reply caches are not
shared between threads), a large one in a worker thread so that health, readiness and metrics answer
within milliseconds while it runs (Python code yields the interpreter lock every few milliseconds).

A hop to a worker thread and back costs about 0.1 ms of CPU, and a warm call at 1,000 candidates not
much more: kube-scheduler's calls about a pod request whose last call of that verb took under
``INLINE_S`` (5 ms: health and metrics wait no longer than that) run on the loop; a new request, or one
that was slow last time, goes to the thread."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable
from typing import TypeVar

__all__ = ["BIG_CALL_NODES", "INLINE_S", "Lane"]

T = TypeVar("T")

BIG_CALL_NODES = 500  # below this a call takes about a millisecond: a thread hop would cost more
INLINE_S = 0.005  # a call that took less than this last time is not worth a thread hop
_KEPT = 256  # call kinds whose last duration is kept (cleared when full)


class Lane:
    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._took: dict[Hashable, float] = {}

    async def run(self, fn: Callable[[], T], big: bool = True) -> T:
        """``fn()`` after any judgement before it; in a worker thread when ``big``."""
        async with self._lock:
            if big:
                return await asyncio.to_thread(fn)
            return fn()

    async def run_timed(self, kind: Hashable, fn: Callable[[], T], big: bool) -> T:
        """As :meth:`run`, but on the loop when the last call of this ``kind`` took under ``INLINE_S``."""
        async with self._lock:
            inline = not big or self._took.get(kind, INLINE_S) < INLINE_S
            started = time.perf_counter()
            result = fn() if inline else await asyncio.to_thread(fn)
            if big:
                if len(self._took) >= _KEPT and kind not in self._took:
                    self._took.clear()
                self._took[kind] = time.perf_counter() - started
            return result
