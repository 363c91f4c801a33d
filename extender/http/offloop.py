"""Judging off the event loop: one judgement at a time (the verdict memo and reply caches are not
shared between threads), a large one in a worker thread so that health, readiness and metrics answer
within milliseconds while it runs (Python code yields the interpreter lock every few milliseconds)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

__all__ = ["BIG_CALL_NODES", "Lane"]

T = TypeVar("T")

BIG_CALL_NODES = 500  # below this a call takes about a millisecond: a thread hop would cost more


class Lane:
    def __init__(self) -> None:
        self._lock = asyncio.Lock()

    async def run(self, fn: Callable[[], T], big: bool = True) -> T:
        """``fn()`` after any judgement before it; in a worker thread when ``big``."""
        async with self._lock:
            if big:
                return await asyncio.to_thread(fn)
            return fn()
