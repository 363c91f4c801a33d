"""What the reserve (``extender.scoring.reserve``) costs a filter call for a share, with it on and off.

    python benchmarks/reserve_cost.py [--nodes 5000] [--calls 200]

Filter calls go through the extender verbs in process (body bytes in, reply bytes out) over a fleet of
G2 nodes in the Alibaba GPU-share convention (8 GPUs, 96 cores, 384 GiB). Two fleets: *room to spare*
(every GPU idle: the reserve holds nothing, it only looks) and *whole GPUs short* (per node 5 GPUs taken
whole, 2 holding a 700-milli share, 1 idle: 80 % allocated, and the whole-GPU pods to come outnumber the
room, so a 400-milli share, which fits no GPU in use, is held off every node). Printed: median and p99
server time per call for a 400-milli share over every node, with the reserve on and off.
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

from extender.advice.replay.advisor_policy import replay_node_object, replay_pod_object
from extender.advice.replay.specs import PodShape
from extender.cluster.state import BoundPod, ClusterState, bound_pod, node_state
from extender.http.advisor import Advisor
from extender.http.verbs import SchedulerVerbs
from extender.scoring import ScoringPolicy

NOW = 1_796_000_000.0
SHARE = replay_pod_object(PodShape(2000, 4096, 1, 400), "share")


def _held(node: str, gpu: int, milli: int, i: int) -> BoundPod:
    obj = replay_pod_object(PodShape(2000, 4096, 1, milli), f"{node}-{i}", gpu)
    found = bound_pod(obj | {"spec": {**obj["spec"], "nodeName": node}})
    assert found is not None
    return found[1]


def fleet(nodes: int, short: bool) -> ClusterState:
    state = ClusterState("bench")
    built = []
    for n in range(nodes):
        name = f"g2-{n:05d}"
        pods = [_held(name, g, 1000, g) for g in range(5)] + [_held(name, g, 700, g) for g in range(5, 7)]
        obj = replay_node_object(name, "G2", 96_000, 393_216, 8)
        built.append(node_state(obj, pods if short else [], state.machines))
    state.replace_all(built)
    return state


def measure(nodes: int, calls: int, short: bool, reserve: bool) -> tuple[float, float, int]:
    advisor = Advisor(fleet(nodes, short), None, ScoringPolicy(reserve_whole_gpus=reserve), clock=lambda: NOW)
    whole = replay_pod_object(PodShape(8000, 32768, 1, 1000))
    for i in range(64):  # the mix learned from whole-GPU pods besides what runs
        advisor.learn(SchedulerVerbs(advisor).pods.request(whole), f"b/whole-{i}")
    verbs = SchedulerVerbs(advisor)
    body = json.dumps({"Pod": SHARE, "NodeNames": sorted(advisor.state.nodes_by_name())}).encode()

    async def run() -> tuple[list[float], int]:
        times, passed = [], 0
        for _ in range(calls):
            started = time.perf_counter()
            _status, reply = await verbs.filter(body)
            times.append(time.perf_counter() - started)
            passed = len(json.loads(reply)["NodeNames"])
        return times, passed

    times, passed = asyncio.run(run())
    times.sort()
    return statistics.median(times) * 1000, times[int(0.99 * (len(times) - 1))] * 1000, passed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    print(f"filter, a 400-milli share over {args.nodes} nodes, {args.calls} calls: server ms, median / p99")
    for short in (False, True):
        label = "whole GPUs short" if short else "room to spare"
        row: list[Any] = []
        for reserve in (False, True):
            median, p99, passed = measure(args.nodes, args.calls, short, reserve)
            row.append(f"reserve {'on ' if reserve else 'off'} {median:6.2f} / {p99:6.2f} ({passed} pass)")
        print(f"{label:>17}: " + "   ".join(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
