"""Work that may run away, run where it can be stopped: a child process with a time and a memory
budget, killed and replaced when it goes over.

A thread cannot be stopped, and a C call that holds the interpreter lock (parsing a large body) stalls
the event loop whatever thread it is in; a child process can be killed, and its memory is its own
(capped with RLIMIT_AS above what its imports took). One job runs at a time; a few may wait.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import resource
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from extender.errors import GpuAdvisorError, InputError, SourceError

__all__ = ["OverBudget", "Sandbox", "SandboxBusy"]

log = logging.getLogger(__name__)

Job = Callable[..., Any]
_MIB = 1024 * 1024


class OverBudget(InputError):
    """The job took longer or needed more memory than its budget: 413 (memory) or 422 (time)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.http_status = status


class SandboxBusy(SourceError):
    """Too many jobs waiting: 503, retry."""


def _address_space() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _child(conn: Connection, job: Job, setup: Any, memory: int) -> None:
    """The child's loop: a job's arguments in, ``("ok", result)`` or ``("error", status, text)`` out."""
    try:
        limit = _address_space() + memory
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (OSError, ValueError):  # not Linux, or a lower hard limit already: keep what there is
        pass
    conn.send(("ready",))
    while True:
        try:
            args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply: tuple[Any, ...] = ("ok", job(setup, *args))
        except MemoryError:
            conn.send(("memory",))
            return  # a process that ran out of memory is not trusted with the next job
        except GpuAdvisorError as exc:
            reply = ("error", exc.http_status, str(exc))
        except RecursionError:
            reply = ("error", 400, "the document nests too deeply")
        except Exception as exc:  # a manifest the model code did not foresee: the caller's input
            reply = ("error", 422, f"cannot judge this input ({type(exc).__name__}: {exc})")
        conn.send(reply)


class Sandbox:
    def __init__(self, job: Job, setup: Any, seconds: float, memory: int, max_waiting: int = 4) -> None:
        self.job, self.setup, self.seconds, self.memory = job, setup, seconds, memory
        self.max_waiting = max_waiting
        self._process: Any = None
        self._conn: Connection | None = None
        self._lock = asyncio.Lock()
        self._waiting = 0

    async def run(self, *args: Any) -> Any:
        """The job's result; raises what the job raised (as status and message), OverBudget or SandboxBusy."""
        if self._waiting >= self.max_waiting:
            raise SandboxBusy(f"{self._waiting} dry-runs are already waiting; retry shortly")
        self._waiting += 1
        try:
            async with self._lock:
                reply = await asyncio.to_thread(self._call, args)
        finally:
            self._waiting -= 1
        if reply[0] == "ok":
            return reply[1]
        if reply[0] == "error":
            error = InputError(reply[2])
            error.http_status = reply[1]
            raise error
        if reply[0] == "memory":
            raise OverBudget(f"needs more than the {self.memory // _MIB} MiB memory budget of a dry-run", 413)
        raise OverBudget(f"took longer than the {self.seconds:g} s budget of a dry-run", 422)

    def _call(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        conn = self._ensure()
        conn.send(args)
        if not conn.poll(self.seconds):
            log.warning("a dry-run ran past its %g s budget: its process is replaced", self.seconds)
            self.close()
            return ("timeout",)
        try:
            reply: tuple[Any, ...] = conn.recv()
        except (EOFError, OSError):  # the child died (killed by the memory limit, most likely)
            self.close()
            return ("memory",)
        if reply[0] == "memory":
            self.close()
        return reply

    def _ensure(self) -> Connection:
        if self._conn is not None and self._process is not None and self._process.is_alive():
            return self._conn
        self.close()
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        process = context.Process(
            target=_child, args=(child, self.job, self.setup, self.memory), name="gpu-advisor-dry-run", daemon=True
        )
        process.start()
        child.close()
        if not parent.poll(120) or parent.recv() != ("ready",):
            process.kill()
            process.join()
            parent.close()
            raise SandboxBusy("the dry-run process did not start")
        self._process, self._conn = process, parent
        return parent

    def close(self) -> None:
        """Stop the child (if any); the next job starts a fresh one."""
        if self._process is not None:
            self._process.kill()
            self._process.join()
            self._process.close()
        if self._conn is not None:
            self._conn.close()
        self._process = self._conn = None
