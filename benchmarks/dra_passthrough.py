"""What a scheduler config without managedResources (the printed default) costs: kube-scheduler
then asks the advisor about every pod, so a pod that wants no GPU must pass through cheaply.

    python benchmarks/dra_passthrough.py [--nodes 1000] [--calls 2000]

Filter calls go through the extender verbs in process (body bytes in, reply bytes out) over a cluster
of NVL72 trays; for each pod kind: median and p99 server time per call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # keep this folder's scripts from shadowing the packages they measure

from extender.http.advisor import Advisor
from extender.http.verbs import SchedulerVerbs
from extender.scoring import ScoringPolicy
from extender.sources.nvl72 import nvl72_rack
from extender.sources.snapshot import parse_snapshot

NOW = 1_796_000_000.0


def pod(resources: dict[str, Any], claims: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "app", "resources": resources}]}
    if claims:
        spec["resourceClaims"] = [{"name": "gpus", "resourceClaimName": "two-gpus"}]
        spec["containers"][0]["resources"] = {"claims": [{"name": "gpus"}]}
    return {"metadata": {"name": "p", "namespace": "default", "uid": "u"}, "spec": spec}


KINDS = {
    "no resources (BestEffort)": pod({}),
    "cpu: 1, memory: 1Gi": pod({"requests": {"cpu": "1", "memory": "1Gi"}}),
    "DRA claim the model does not know": pod({}, claims=True),
    "nvidia.com/gpu: 4 (for scale)": pod({"limits": {"nvidia.com/gpu": "4"}}),
}


def measure(nodes: int, calls: int) -> dict[str, tuple[float, float]]:
    snap = parse_snapshot({"nodes": nvl72_rack(trays=nodes), "pods": []}, now=NOW)
    advisor = Advisor(state=snap.cluster("bench"), telemetry=None, policy=ScoringPolicy(), clock=lambda: NOW)
    verbs = SchedulerVerbs(advisor)
    names = sorted(advisor.state.nodes_by_name())

    async def one_kind(body: bytes) -> list[float]:
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            status, _reply = await verbs.filter(body)
            times.append(time.perf_counter() - started)
            assert status == 200
        return sorted(times)

    out = {}
    for kind, body_pod in KINDS.items():
        times = asyncio.run(one_kind(json.dumps({"Pod": body_pod, "NodeNames": names}).encode()))
        out[kind] = (statistics.median(times) * 1e3, times[int(len(times) * 0.99) - 1] * 1e3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    print(f"filter, {args.nodes} candidate nodes, {args.calls} calls each: median / p99 ms")
    for kind, (median, p99) in measure(args.nodes, args.calls).items():
        print(f"  {kind:36} {median:7.3f} / {p99:7.3f}")


if __name__ == "__main__":
    main()
