"""Server time of one admission review, in process, on the simulated cluster.

    python benchmarks/admission.py [--calls 2000]

Reviews go through the whole ASGI app (body read, parse, rules, JSON out) via httpx's ASGITransport; the
time is what the app spends on the call. Goal: p99 ≤ 3 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # keep this folder's scripts from shadowing the packages they measure

import httpx

from extender.http.advisor import Advisor
from extender.scoring import ScoringPolicy
from extender.sources.snapshot import simulated_cluster
from gpu_advisor.app import create_app
from gpu_advisor.memory import settle_memory

REVIEW: dict[str, Any] = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
        "uid": "0f1e2d3c-0000-4000-8000-000000000000",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "namespace": "ml",
        "operation": "CREATE",
        "object": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "llm", "namespace": "ml"},
            "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.9.0",
                                     "args": ["--model", "meta-llama/Meta-Llama-3-70B-Instruct"],
                                     "resources": {"limits": {"nvidia.com/gpu": "2"}}}]},
        },
    },
}  # fmt: skip


def variants() -> dict[str, dict[str, Any]]:
    out = {"pod, 70B model, 2 GPUs": REVIEW}
    deployment = copy.deepcopy(REVIEW)
    pod = deployment["request"]["object"]
    deployment["request"]["kind"] = {"group": "apps", "version": "v1", "kind": "Deployment"}
    spec = {"replicas": 3, "template": {"metadata": {}, "spec": pod["spec"]}}
    deployment["request"]["object"] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": pod["metadata"],
        "spec": spec,
    }
    out["deployment template"] = deployment
    return out


class ServerTime:
    def __init__(self, app: Any) -> None:
        self.app, self.last = app, 0.0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        started = time.perf_counter()
        await self.app(scope, receive, send)
        self.last = time.perf_counter() - started


async def measure(app: Any, path: str, body: bytes, calls: int) -> list[float]:
    timed = ServerTime(app)
    times = []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=timed), base_url="http://bench") as client:
        for _ in range(calls):
            reply = await client.post(path, content=body, headers={"Content-Type": "application/json"})
            assert reply.status_code == 200, reply.text
            times.append(timed.last)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    snap = simulated_cluster()
    advisor = Advisor(state=snap.cluster("simulated"), telemetry=snap.telemetry(60), policy=ScoringPolicy())
    settle_memory()
    app = create_app(advisor)
    print(f"{args.calls} calls each, simulated cluster ({len(advisor.state.nodes())} nodes); server time per call")
    print(f"{'review':<26}{'endpoint':<28}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}")
    for label, review in variants().items():
        body = json.dumps(review).encode()
        for path in ("/admission/validate", "/admission/validate/enforce", "/admission/mutate"):
            times = sorted(asyncio.run(measure(app, path, body, args.calls)))
            p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
            print(
                f"{label:<26}{path:<28}{statistics.median(times) * 1e3:>8.3f}{p99 * 1e3:>8.3f}{times[-1] * 1e3:>8.3f}"
            )


if __name__ == "__main__":
    main()
