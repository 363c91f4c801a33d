"""The served process's memory: out of the garbage collector's way once built, and the heap a telemetry
refresh frees handed back to the system."""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Callable, Iterable

from extender.http.advisor import Advisor

__all__ = ["settle_memory"]


def settle_memory(advisors: Iterable[Advisor] = ()) -> None:
    """Call once the cluster model is built: move it out of the garbage collector's way, and hand the
    heap a telemetry refresh freed back to the system after each refresh.

    The model is hundreds of thousands of long-lived objects and each extender call allocates
    thousands of short-lived ones; with default settings full collections walk the model every few
    calls and pause the server for hundreds of milliseconds (measured by benchmarks/extender.py).
    A refresh replaces the readings and the verdicts of the nodes it moved: glibc keeps the freed
    memory in its arenas, and over twenty refreshes resident memory crept up by some 30 MiB at 5,000
    nodes with nothing more alive (benchmarks/wire.py); ``malloc_trim`` returns what it can (a short
    run: 153 → 148 MiB; most of the growth is not yet accounted for).
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    trim = _malloc_trim()
    if trim is not None:
        for advisor in advisors:
            if advisor.telemetry is not None:  # listeners run in order: after the standing tables refill
                advisor.telemetry.subscribe(trim)


def _malloc_trim() -> Callable[[], None] | None:
    """glibc's ``malloc_trim(0)``, or None where there is no glibc (the trim is an optimisation)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None

    def release() -> None:
        trim(0)

    return release
