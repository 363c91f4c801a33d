"""kube-scheduler's side of benchmarks/scheduler_pace.py: the calls it makes per pod, with the node
names it sends an extender as it sends them.

Only the nodes its own filter plugins passed reach the extender: NodeResourcesFit refuses a node without
room for the pod's ``nvidia.com/gpu`` or CPU (``Room``). They come in the order its parallel filter
found them, different on every call (pkg/scheduler/schedule_one.go, ``findNodesThatPassFilters``): 16
goroutines take chunks of about sqrt(n) nodes in turn (client-go's ``ParallelizeUntil``, chunk size
``min(sqrt(n), n/16 + 1)``) and append each node that passes at an atomically incremented index; on a
machine with ``running`` cores that many chunks are checked at once, so the list interleaves them node
by node (``found_order``). The extender's filter reply keeps that order, and prioritize is sent the names
it passed, in it; when the filter passes one node, kube-scheduler skips scoring and prioritize and binds it
(``schedulePod``: "When only one node after predicate, just use it"), as it does with the advisor's
default ``--filter-passes best``.
"""

from __future__ import annotations

import http.client
import math
import random
import ssl
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

__all__ = ["Caller", "Kube", "Room", "chunk_size", "client_tls", "found_order", "noop_pass", "schedule"]

PARALLELISM = 16  # kube-scheduler's default ``parallelism``
# (the pod object, whole nvidia.com/gpu it asks for, its CPU milli)
PodOf = Callable[[int], tuple[dict[str, Any], int, int]]


def chunk_size(n: int, parallelism: int = PARALLELISM) -> int:
    """client-go's chunkSizeFor: at most sqrt(n), at most n/parallelism + 1, at least 1."""
    return max(1, min(int(math.sqrt(n)), n // parallelism + 1))


def found_order(names: Sequence[str], rng: random.Random, running: int = 2) -> list[str]:
    """``names`` in an order kube-scheduler's parallel filter may find them: ``running`` chunks checked
    at once, their nodes interleaved at random, the next chunk taken as one ends."""
    size = chunk_size(len(names))
    chunks: Iterator[Sequence[str]] = (names[i : i + size] for i in range(0, len(names), size))
    active = [deque(chunk) for chunk in (next(chunks, None) for _ in range(running)) if chunk]
    order: list[str] = []
    while active:
        k = rng.randrange(len(active))
        order.append(active[k].popleft())
        if not active[k]:
            more = next(chunks, None)
            if more:
                active[k] = deque(more)
            else:
                del active[k]
    return order


class Room:
    """What kube-scheduler's NodeResourcesFit counts on each node: whole ``nvidia.com/gpu`` and CPU."""

    def __init__(self, gpus: dict[str, int], cpu_milli: dict[str, int]) -> None:
        self.gpus, self.cpu = dict(gpus), dict(cpu_milli)

    def fits(self, names: Sequence[str], gpus: int, cpu_milli: int) -> list[str]:
        """The nodes with room for ``gpus`` whole GPUs (0: none, or a share it does not count) and CPU."""
        return [n for n in names if self.gpus.get(n, 0) >= gpus and self.cpu.get(n, 0) >= cpu_milli]

    def take(self, node: str, gpus: int, cpu_milli: int) -> None:
        self.gpus[node] = self.gpus.get(node, 0) - gpus
        self.cpu[node] = self.cpu.get(node, 0) - cpu_milli


@dataclass
class Kube:
    """kube-scheduler's view: every node, what it counts on them, and how it orders a call's names."""

    names: list[str]
    room: Room
    same_order: bool = False  # every node, in one order, every call (what this benchmark sent before)
    rng: random.Random = field(default_factory=lambda: random.Random(42))
    # what the advisor was sent, by pod: the filter's names and prioritize's, for the no-op's pass
    filtered: dict[int, bytes] = field(default_factory=dict)
    prioritized: dict[int, bytes] = field(default_factory=dict)
    passed: dict[int, int] = field(default_factory=dict)  # how many names the advisor's filter passed, by pod

    def candidates(self, gpus: int, cpu_milli: int) -> list[str]:
        if self.same_order:
            return self.names
        return found_order(self.room.fits(self.names, gpus, cpu_milli), self.rng)


class Caller:
    """One kept-alive connection, as kube-scheduler's HTTP client keeps one per extender; with ``tls``, over
    HTTPS with kube-scheduler's client certificate, as the printed profile calls the advisor."""

    def __init__(self, port: int, tls: ssl.SSLContext | None = None) -> None:
        self.conn: http.client.HTTPConnection = (
            http.client.HTTPSConnection("127.0.0.1", port, timeout=30, context=tls)
            if tls is not None
            else http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        )

    def post(self, path: str, body: bytes, reply_key: str = "") -> Any:
        headers = {"Content-Type": "application/json"} | ({"X-Wire-Reply": reply_key} if reply_key else {})
        self.conn.request("POST", path, body, headers)
        reply = self.conn.getresponse()
        data = reply.read()
        if reply.status != 200:
            raise SystemExit(f"{path} answered {reply.status}: {data[:300]!r}")
        return orjson.loads(data)


def client_tls(certs: Path) -> ssl.SSLContext:
    """kube-scheduler's side of the printed profile's tlsConfig: the advisor checked against the CA (its
    certificate names the Service, not 127.0.0.1: the chain is checked, the name is not), the client pair
    presented."""
    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    context.check_hostname = False
    context.load_cert_chain(str(certs / "scheduler.crt"), str(certs / "scheduler.key"))
    return context


def args_body(pod_json: bytes, names_json: bytes) -> bytes:
    """ExtenderArgs as Go's encoder writes it: fields in order, compact."""
    return b'{"Pod":' + pod_json + b',"Nodes":null,"NodeNames":' + names_json + b"}"


def schedule(caller: Caller, api: Any, pods: range, pod_of: PodOf, kube: Kube, bind_verb: bool) -> float:
    """kube-scheduler's calls for each pod; the seconds spent waiting for filter and prioritize (inside
    kube-scheduler's scheduling cycle; binding is not)."""
    waited = 0.0
    for i in pods:
        pod, gpus, cpu = pod_of(i)
        pod_json = orjson.dumps(pod)
        kube.filtered[i] = orjson.dumps(kube.candidates(gpus, cpu))
        asked = time.perf_counter()
        passed = caller.post("/scheduler/filter", args_body(pod_json, kube.filtered[i]))["NodeNames"] or []
        waited += time.perf_counter() - asked
        kube.passed[i] = len(passed)
        if not passed:
            continue  # unschedulable: kube-scheduler parks it
        if len(passed) == 1:  # one feasible node: no scoring, no prioritize
            best = passed[0]
        else:
            kube.prioritized[i] = orjson.dumps(passed)
            asked = time.perf_counter()
            scores = caller.post("/scheduler/prioritize", args_body(pod_json, kube.prioritized[i]))
            waited += time.perf_counter() - asked
            best = max(scores, key=lambda s: s["Score"])["Host"]  # the advisor gives one node its top score
        kube.room.take(best, gpus, cpu)
        if bind_verb:  # the advisor claims the node, records a share's GPU and posts the binding itself
            meta = pod["metadata"]
            api.pods_by_name[f"{meta['namespace']}/{meta['name']}"] = pod
            binding = {"PodName": meta["name"], "PodNamespace": meta["namespace"], "PodUID": meta["uid"], "Node": best}
            error = caller.post("/scheduler/bind", orjson.dumps(binding))["Error"]
            if error:
                raise SystemExit(f"bind {meta['name']}: {error}")
        else:
            api.bind(pod, best)
    return waited


def noop_replies(kube: Kube) -> dict[str, str]:
    """The no-op's answers, by key: a filter passing n names (as many as the advisor's filter passed) and a
    prioritize scoring n, with names of the fleet (the same bytes as the advisor's answers to within a
    name's length)."""
    replies: dict[str, str] = {}
    for n in kube.passed.values():
        doc: dict[str, Any] = {
            "Nodes": None,
            "NodeNames": kube.names[:n],
            "FailedNodes": {},
            "FailedAndUnresolvableNodes": {},
        }
        replies.setdefault(f"f{n}", orjson.dumps(doc | {"Error": ""}).decode())
    for sent in kube.prioritized.values():
        n = len(orjson.loads(sent))
        replies.setdefault(f"p{n}", orjson.dumps([{"Host": h, "Score": 0} for h in kube.names[:n]]).decode())
    return replies


def noop_pass(caller: Caller, pods: range, pod_of: PodOf, kube: Kube) -> float:
    """The very bodies the advisor was sent, to a no-op; the seconds waited, as ``schedule`` counts them."""
    waited = 0.0
    for i in pods:
        pod_json = orjson.dumps(pod_of(i)[0])
        filtered, prioritized = kube.filtered[i], kube.prioritized.get(i)
        keys = f"f{kube.passed[i]}", f"p{len(orjson.loads(prioritized or b'[]'))}"
        asked = time.perf_counter()
        caller.post("/scheduler/filter", args_body(pod_json, filtered), keys[0])
        if prioritized is not None:
            caller.post("/scheduler/prioritize", args_body(pod_json, prioritized), keys[1])
        waited += time.perf_counter() - asked
    return waited
