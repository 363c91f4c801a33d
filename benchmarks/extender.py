"""Server time of /scheduler/filter + /scheduler/prioritize on a 5,000-node synthetic cluster.

    python benchmarks/extender.py [--nodes 5000] [--rounds 200]

Requests go through the whole ASGI stack in process (httpx's ASGITransport: body read, JSON parse,
scoring, JSON encode), with no network. Server time is what the ASGI app spends on a call, from its
start to its last byte sent; cycles/s (filter + prioritize) also counts the in-process client. A no-op
handler on the same stack (same body reading and parsing, a trivial answer) shows what the stack itself
costs. That handler is not a true no-op (it parses the body and encodes a reply of 5,000 dicts with
``json``, 1.7 ms), and nothing here crosses a socket: for the advisor against a true no-op over the
wire, run benchmarks/wire.py. The pod shapes rotate (1, 2, 4, 8 GPUs);
the first request of each shape is reported apart ("cold"), the rest are steady state.
Goals: 500 names p99 ≤ 2 ms, 5,000 names p99 ≤ 15 ms, and ≤ 1.5× the no-op.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path, and this file's name would then shadow
# the `extender` package it measures.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import argparse
import asyncio
import json
import math
import random
import statistics
import time
from typing import Any

import httpx
from fastapi import FastAPI, Request, Response

from extender.cluster import ANNOTATION_FREE_GPUS, FreeReport, node_state
from extender.http.advisor import Advisor
from extender.http.requests import read_json
from extender.scoring import ScoringPolicy
from extender.sources.snapshot import parse_snapshot
from gpu_advisor.app import create_app
from gpu_advisor.memory import settle_memory

MACHINES = ["dgx1-v100", "hgx-h100", "dgx-a100", "l40s-pcie", "gke-a4-b200"]


def synthetic_cluster(n: int, seed: int = 5) -> dict[str, Any]:
    rnd = random.Random(seed)
    nodes = []
    for i in range(n):
        machine = MACHINES[i % len(MACHINES)]
        free = sorted(rnd.sample(range(8), rnd.randint(0, 8)))
        telemetry = [
            {
                "gpu": g,
                "sm_util": rnd.choice([0, 0, 5, 40, 95]),
                "memory_total_mib": 81920,
                "memory_used_mib": rnd.choice([0, 0, 4096, 30000]),
            }
            for g in range(8)
        ]
        nodes.append({"name": f"gpu-{i:05d}", "machine": machine, "free": free, "telemetry": telemetry})
    return {"nodes": nodes}


def noop_app() -> FastAPI:
    app = FastAPI()

    @app.post("/scheduler/filter")
    async def noop_filter(request: Request) -> Response:
        doc = await read_json(request, 64 * 1024 * 1024)
        reply = {
            "Nodes": None,
            "NodeNames": doc["NodeNames"],
            "FailedNodes": {},
            "FailedAndUnresolvableNodes": {},
            "Error": "",
        }
        return Response(json.dumps(reply, separators=(",", ":")), media_type="application/json")

    @app.post("/scheduler/prioritize")
    async def noop_prioritize(request: Request) -> Response:
        doc = await read_json(request, 64 * 1024 * 1024)
        reply = [{"Host": n, "Score": 0} for n in doc["NodeNames"]]
        return Response(json.dumps(reply, separators=(",", ":")), media_type="application/json")

    return app


def body(names: list[str], gpus: int) -> bytes:
    resources = {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"nvidia.com/gpu": str(gpus)}}
    pod = {
        "metadata": {"name": f"train-{gpus}", "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "resources": resources}]},
    }
    return json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}).encode()


class ServerTime:
    """ASGI wrapper that records how long the app itself takes per call."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.last = 0.0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        started = time.perf_counter()
        await self.app(scope, receive, send)
        self.last = time.perf_counter() - started


def churn(advisor: Advisor, snap: Any, count: int, rnd: random.Random) -> None:
    """Between calls, `count` nodes change their free GPUs, as pods start and stop (outside the timing)."""
    for raw in rnd.sample(snap.nodes, count):
        free = sorted(rnd.sample(range(8), rnd.randint(0, 8)))
        raw["metadata"]["annotations"][ANNOTATION_FREE_GPUS] = FreeReport(tuple(free), time.time()).to_json()
        advisor.state.put(node_state(raw, machines=advisor.state.machines))


async def run(
    app: FastAPI, names: list[str], rounds: int, between: Any = None
) -> tuple[list[float], list[float], float]:
    timed = ServerTime(app)
    transport = httpx.ASGITransport(app=timed)
    cold: list[float] = []
    steady: list[float] = []
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        bodies = {k: body(names, k) for k in (1, 2, 4, 8)}
        seen: set[int] = set()
        started = time.perf_counter()
        for r in range(rounds):
            k = (1, 2, 4, 8)[r % 4]
            f = await client.post("/scheduler/filter", content=bodies[k], headers={"Content-Type": "application/json"})
            filter_time = timed.last
            p = await client.post(
                "/scheduler/prioritize", content=bodies[k], headers={"Content-Type": "application/json"}
            )
            assert f.status_code == 200 and p.status_code == 200, (f.text[:200], p.text[:200])
            (steady if k in seen else cold).extend([filter_time, timed.last])
            seen.add(k)
            if between is not None:
                between()
        elapsed = time.perf_counter() - started
    return cold, steady, rounds / elapsed


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile; NaN for no values (a run of four rounds or fewer asks each pod shape once, so
    every call is cold and none is steady)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def ms(values: list[float], q: float) -> str:
    """The ``q`` quantile in milliseconds (the median at 0.5, the max at 1.0), or ``-`` when there is none."""
    figure = statistics.median(values) if q == 0.5 and values else pct(values, q)
    return "-" if math.isnan(figure) else f"{figure * 1e3:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=200, help="filter+prioritize cycles per candidate count")
    parser.add_argument("--churn", type=int, default=2, help="nodes that change between cycles (default 2)")
    args = parser.parse_args()
    t0 = time.perf_counter()
    snap = parse_snapshot(synthetic_cluster(args.nodes))
    policy = ScoringPolicy()
    advisor = Advisor(state=snap.cluster("synthetic"), telemetry=snap.telemetry(3600), policy=policy)
    settle_memory()  # what `gpu-advisor serve` does once its model is built
    built = time.perf_counter() - t0
    print(f"synthetic cluster: {args.nodes} nodes of {len(MACHINES)} machine types, built in {built:.1f} s")
    apps = {"advisor": create_app(advisor), "no-op": noop_app()}
    all_names = [n.name for n in advisor.state.nodes()]
    rnd = random.Random(1)
    print("server time per call (filter and prioritize alike), steady state; cold = first call of a pod shape;")
    print(f"{args.churn} random nodes change their free GPUs between cycles (the advisor's runs only)")
    print(f"{'names':>6} {'handler':<8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'cold max ms':>12} {'cycles/s':>9}")
    results: dict[tuple[int, str], float] = {}
    for count in (100, 500, 5000):
        names = rnd.sample(all_names, min(count, len(all_names)))
        for label, app in apps.items():
            between = (lambda: churn(advisor, snap, args.churn, rnd)) if label == "advisor" and args.churn else None
            cold, steady, rate = asyncio.run(run(app, names, args.rounds, between))
            results[(count, label)] = pct(steady, 0.99)
            print(
                f"{count:>6} {label:<8} {ms(steady, 0.5):>8} {ms(steady, 0.99):>8} "
                f"{ms(steady, 1.0):>8} {ms(cold, 1.0):>12} {rate:>9.0f}"
            )
        ratio = results[(count, "advisor")] / results[(count, "no-op")]
        if math.isnan(ratio):
            print(f"{'':>6} no steady-state calls: each of the 4 pod shapes is cold on its first call (--rounds > 4)")
        else:
            print(f"{'':>6} advisor p99 / parse-and-encode handler p99 = {ratio:.2f}× (not a true no-op: see wire.py)")


if __name__ == "__main__":
    main()
