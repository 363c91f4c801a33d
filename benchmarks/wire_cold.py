"""Start-up and the first call of new pod shapes (cold), over the wire, against the 5,000-node cluster.

    python benchmarks/wire_cold.py [--nodes 5000] [--counts 500,5000] [--fleet synthetic|mixed]

Writes the fleet (``--fleet``: the synthetic cluster of benchmarks/extender.py, or the mixed fleet of
benchmarks/mixed_fleet.py) as a JSON snapshot, measures ``gpu-advisor serve
--cluster FILE`` to /readyz and its resident memory, then starts the advisor of benchmarks/wire_servers.py
and times the first filter call of new pod shapes (a fresh connection each), wall time and the server's
CPU time. benchmarks/wire.py runs the same after its warm and refresh runs. All traffic to 127.0.0.1.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path (see benchmarks/extender.py).
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import argparse
import importlib.util
import json
import os
import random
import statistics
import tempfile
import time
from typing import Any

HERE = Path(__file__).resolve().parent
SETTLE_PODS = 1_100


def _wire() -> Any:
    """benchmarks/wire.py as a module: its bodies, server and client helpers."""
    spec = importlib.util.spec_from_file_location("bench_wire", HERE / "wire.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


wire = _wire()
SHAPES = wire.SHAPES


def write_snapshot(work: Path, nodes: int, fleet: str = "synthetic") -> tuple[Path, list[str]]:
    """The fleet (see benchmarks/wire.py) as a JSON file in ``work``, and its node names in a fixed
    shuffled order."""
    snapshot = work / f"cluster-{fleet}.json"
    doc = wire.fleet_snapshot(fleet, nodes)
    snapshot.write_text(json.dumps(doc))
    names = [n["name"] for n in doc["nodes"]]
    random.Random(1).shuffle(names)
    size = snapshot.stat().st_size / 1e6
    print(f"{fleet} snapshot: {nodes} nodes, {size:.1f} MB JSON; load {os.getloadavg()}")
    return snapshot, names


def cold_calls(snapshot: Path, names: list[str], counts: list[int]) -> dict[tuple[int, str], list[tuple[float, float]]]:
    """(wall ms, server CPU ms) of the first call of each new pod shape (filter; a fresh connection
    each), by (names, kind) as :func:`new_shapes` lists them. The server's CPU time (all its threads,
    from /proc) says what a call costs when the machine is busy with other work and wall time is not
    its own."""
    port = wire.free_port()
    argv = [sys.executable, str(HERE / "wire_servers.py"), "advisor", "--snapshot", str(snapshot), "--port", str(port)]
    with wire.server(argv, port) as (proc, _):

        def timed(text: str) -> tuple[float, float]:
            cpu = cpu_seconds(proc.pid)
            wall = wire.post(port, "/scheduler/filter", text)[0]
            return wall * 1e3, (cpu_seconds(proc.pid) - cpu) * 1e3

        # A live advisor has counted the cluster's running pods into its learned mix at start; this
        # snapshot has none. Count 1,100 pods first, so that no renewal of the mix (at 1, 2, 4 … 1,024
        # pods, then every 2,048) falls among the calls measured (whole-GPU pods no longer read the
        # mix, but a renewal is rare in a running cluster and should not colour these figures).
        for i in range(SETTLE_PODS):
            wire.post(port, "/scheduler/filter", wire.body(names[:1], 1, replica=100_000 + i))
        for count in counts:  # the shapes that benchmarks/wire.py's warm runs ask about, seen once
            for k in SHAPES:
                wire.post(port, "/scheduler/filter", wire.body(names[:count], k))
        return {key: [timed(text) for text in bodies] for key, bodies in new_shapes(names, counts).items()}


def new_shapes(names: list[str], counts: list[int]) -> dict[tuple[int, str], list[str]]:
    """Bodies of pod shapes no call asked about yet, by (names, kind): "VRAM" — pods of 1, 2, 4, 8 GPUs
    (sizes the cluster has seen) each declaring a new VRAM; "CPU" — the same sizes with new CPU and
    memory requests (new Deployments); "size" — pods of 3, 5, 6, 7 GPUs, sizes nobody asked for (the
    advisor keeps them standing); "NVLink" — pods of 2, 4, 8 GPUs requiring NVLink (standing too);
    "model" — pods of 1, 2, 4, 8 GPUs naming a model server; "odd NVLink" — pods of 3, 5, 6, 7 GPUs
    requiring NVLink (nothing stands for them: their first call works out a plan per kind of node and
    a verdict per node where the twin's does not hold)."""
    found: dict[tuple[int, str], list[str]] = {}
    for count in counts:
        memories = [1 + n + 10 * counts.index(count) for n in range(8)]
        found[(count, "VRAM")] = [wire.body(names[:count], k, m) for k, m in zip(SHAPES * 2, memories, strict=True)]
    for count in counts:
        cpus = [4000 + 500 * n + 5000 * counts.index(count) for n in range(4)]
        found[(count, "CPU")] = [wire.body(names[:count], k, cpu_milli=c) for k, c in zip(SHAPES, cpus, strict=True)]
    for count in counts:
        sizes = (3, 5, 6, 7) if count == counts[0] else (7, 6, 5, 3)
        found[(count, "size")] = [wire.body(names[:count], k) for k in sizes]
    for count in counts:
        linked = (2, 4, 8) if count == counts[0] else (8, 4, 2)
        found[(count, "NVLink")] = [wire.body(names[:count], k, nvlink=True, cpu_milli=900) for k in linked]
    for count in counts:
        served = MODELS[counts.index(count) % 2 :: 2]  # models this count has not seen
        found[(count, "model")] = [wire.body(names[:count], k, model=m) for k, m in zip(SHAPES, served, strict=True)]
    for count in counts:
        sizes = (3, 5, 6, 7) if count == counts[0] else (7, 6, 5, 3)
        found[(count, "odd NVLink")] = [wire.body(names[:count], k, nvlink=True) for k in sizes]
    return found


def cpu_seconds(pid: int) -> float:
    """CPU seconds all threads of a process have run so far (nanoseconds in each task's schedstat)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):  # a thread that ended meanwhile
            continue
    return total / 1e9


def startup(snapshot: Path) -> tuple[float, float]:
    """(seconds to /readyz, resident MiB once ready) of ``gpu-advisor serve --cluster FILE``."""
    port = wire.free_port()
    code = "import sys; from gpu_advisor.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = [sys.executable, "-c", code, "serve", "--cluster", str(snapshot), "--port", str(port)]
    with wire.server(argv, port) as (proc, seconds):
        time.sleep(0.5)
        return seconds, wire.rss_mib(proc.pid)[0]


# Model servers a pod may name (vLLM's --model), 7B to 70B: sizes that fit with room, fit tight or do not fit.
MODELS = (
    "mistralai/Mistral-7B-v0.1",
    "meta-llama/Llama-2-7b-hf",
    "meta-llama/Llama-2-13b-hf",
    "Qwen/Qwen2-7B-Instruct",
    "meta-llama/Llama-2-70b-hf",
    "tiiuae/falcon-40b",
    "meta-llama/Meta-Llama-3-8B",
    "mistralai/Mixtral-8x7B-v0.1",
)
KINDS = {
    "VRAM": "a known size with a new VRAM declaration",
    "CPU": "a known size with new CPU and memory requests",
    "size": "a GPU count never asked before (a standing table)",
    "NVLink": "NVLink required, 2, 4 or 8 GPUs (a standing table)",
    "model": "a known size naming a model server (vLLM --model)",
    "odd NVLink": "NVLink required, 3, 5, 6 or 7 GPUs (no table: plans and verdicts worked out)",
}


def report(cold: dict[tuple[int, str], list[tuple[float, float]]]) -> None:
    for (count, kind), times in cold.items():
        walls, cpus = [t[0] for t in times], [t[1] for t in times]
        listed = ", ".join(f"{t:.1f}" for t in walls)
        what = KINDS[kind]
        print(
            f"cold first call, {what}, {count} names (ms): {listed}; median {statistics.median(walls):.1f}, "
            f"max {max(walls):.1f}; server CPU median {statistics.median(cpus):.1f} ms"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000, help="nodes in the fleet (default 5000)")
    parser.add_argument("--counts", type=lambda s: [int(x) for x in s.split(",")], default=[500, 5000])
    parser.add_argument("--fleet", choices=wire.FLEETS, default="synthetic", help="see benchmarks/wire.py")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wire-cold-") as tmp:
        snapshot, names = write_snapshot(Path(tmp), args.nodes, args.fleet)
        seconds, rss = startup(snapshot)
        print(f"gpu-advisor serve --cluster FILE: ready in {seconds:.2f} s, {rss:.0f} MiB resident")
        report(cold_calls(snapshot, names, [c for c in args.counts if c <= args.nodes]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
