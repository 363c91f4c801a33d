"""The served process's memory: out of the garbage collector's way once built, glibc's arenas capped, and
the heap a telemetry refresh frees handed back to the system."""

from __future__ import annotations

import ctypes
import gc
import threading
import zlib
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from extender.http.advisor import Advisor

__all__ = ["TRIM_EVERY_S", "kept_as_json", "settle_memory", "stop_trimming"]

# mallopt(3)'s parameter (malloc.h). Not M_MMAP_THRESHOLD: held at 128 KiB, every 5,000-name body and
# reply was a fresh mapping, faulted in page by page, 70-90 us a call (1.3x a no-op at 1 connection,
# benchmarks/wire.py) for 4 MiB less resident; glibc's own threshold rises past them and reuses the heap.
_M_ARENA_MAX = -8
# Threads each get an arena of their own (8 per core by default); memory one thread frees is only
# reused by that arena. The request threads and the refreshing thread need not more than two.
ARENA_MAX = 2
# How often the served process hands its freed heap back besides after each refresh: each extender call
# frees lists and replies of its candidates' length (5,000 names: tens of KiB each) and each binding the
# objects of a watch event; glibc kept some 9 MiB of them at 5,000 nodes after 2,000 bindings
# (benchmarks/scheduler_pace.py --fleet bare: 157 MiB resident, 149 once trimmed). A trim of that heap
# takes a few milliseconds, outside the interpreter lock.
TRIM_EVERY_S = 5.0


def settle_memory(advisors: Iterable[Advisor] = (), trim_every_s: float = TRIM_EVERY_S) -> None:
    """Call once the cluster model is built, before serving: move it out of the garbage collector's
    way, cap glibc's arenas, and hand the heap a telemetry refresh freed
    back to the system after each refresh.

    The model is hundreds of thousands of long-lived objects and each extender call allocates
    thousands of short-lived ones; with default settings full collections walk the model every few
    calls and pause the server for hundreds of milliseconds (measured by benchmarks/extender.py).
    A refresh replaces the readings and the verdicts of the nodes it moved: glibc keeps the freed
    memory in its arenas, and over the refresh runs of benchmarks/wire.py resident memory crept up by
    some 30 MiB at 5,000 nodes with little more alive. ``malloc_trim`` after each refresh and the
    arena cap return part of it. And every ``trim_every_s`` seconds (0: never), on a thread of its own,
    what the extender calls and the watch's events freed meanwhile.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    libc = _glibc()
    if libc is None:
        return  # no glibc: the settings and the trim are optimisations
    libc.mallopt(_M_ARENA_MAX, ARENA_MAX)
    trim = libc.malloc_trim
    trim(0)  # what building the model freed: a live cluster's lists, parsed whole, held no telemetry trims

    def release() -> None:
        trim(0)

    for advisor in advisors:
        if advisor.telemetry is not None:  # listeners run in order: after the standing tables refill
            advisor.telemetry.subscribe(release)
    if trim_every_s > 0:
        _trim_every(release, trim_every_s)


class _Trimmer(threading.Thread):
    def __init__(self, release: Callable[[], None], every_s: float) -> None:
        super().__init__(name="malloc-trim", daemon=True)
        self.release, self.every_s = release, every_s
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.every_s):
            self.release()


_TRIMMER: list[_Trimmer] = []  # the one running, if any


def _trim_every(release: Callable[[], None], every_s: float) -> None:
    """One thread trims the heap every ``every_s`` seconds (a process settled again keeps that one; at
    another pace, it is replaced: the one running would sleep out its old interval first)."""
    if _TRIMMER and _TRIMMER[0].is_alive():
        if _TRIMMER[0].every_s == every_s:
            _TRIMMER[0].release = release
            return
        stop_trimming()
    _TRIMMER[:] = [_Trimmer(release, every_s)]
    _TRIMMER[0].start()


def stop_trimming() -> None:
    """Stop the periodic trim (tests; a process that ends needs not)."""
    for trimmer in _TRIMMER:
        trimmer.stopped.set()
        trimmer.join()
    _TRIMMER.clear()


def _glibc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt, libc.malloc_trim  # noqa: B018 - both must be there
    except (OSError, AttributeError):
        return None
    return libc


def kept_as_json(objects: list[dict[str, Any]]) -> Callable[[], list[dict[str, Any]]]:
    """The objects, read back on each call from compressed JSON kept in their stead: the console reads
    a snapshot's Pod objects now and then, and a 5,000-node snapshot's pods were 12 MiB of dicts held
    for it (4 MiB as JSON, 0.3 MiB compressed; read back in milliseconds). Objects orjson cannot write
    (an integer past 64 bits) are kept as they are."""
    try:
        packed = zlib.compress(orjson.dumps(objects), 1)
    except (orjson.JSONEncodeError, TypeError):
        return lambda: objects
    return lambda: orjson.loads(zlib.decompress(packed))
