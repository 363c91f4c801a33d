"""The extender over the wire: the real server against a true no-op, in one run, with wrk.

    apt-get install wrk; pip install -e '.[test]'
    python benchmarks/wire.py [--nodes 5000] [--duration 3] [--fleets synthetic,mixed] [--out benchmarks/results]

Two fleets, one after the other, each measured the same way: "synthetic", the 5,000-node cluster of
benchmarks/extender.py (five NVIDIA machine types, random free GPUs, no pods), and "mixed", the
simulated cluster's seven nodes (V100 DGX-1s, HGX H100, L40S, A100 with MIG, time-sliced T4s, MI300X)
with their pods and telemetry, replicated to as many nodes (benchmarks/mixed_fleet.py). For each it
writes the fleet as a JSON snapshot, starts
``gpu-advisor serve --cluster FILE`` on 127.0.0.1 (start-up time to /readyz and resident memory are
measured), fetches its reply to every body and starts the no-op of benchmarks/wire_servers.py, which
answers those very bytes. Then wrk (one thread, 1 and 8 connections) POSTs real kube-scheduler bodies
(the captured filter body, its NodeNames swapped for 1/100/500/5,000 names, pods of 1, 2, 4 and 8 GPUs
in turn) to /scheduler/filter and /scheduler/prioritize of each, advisor then no-op, for ``--duration``
seconds each; then all again with a telemetry refresh of every GPU every ``--refresh-every`` seconds
(each such run lasting at least that long). Last, the first call of new pod shapes (cold) at 500 and
5,000 names, as benchmarks/wire_cold.py measures them (that script alone: start-up and cold calls).

Prints req/s, p50/p99 and the advisor/no-op ratio with the load average, and per fleet the start-up
time and resident memory (once ready, and of the advisor after its refresh runs). Writes to ``--out``:
wire.csv (a row per fleet, refresh, names, verb and connections), wire-fleets.csv (a row per fleet:
start-up and memory), wire.png (the synthetic fleet) and wire-mixed.png (the mixed fleet).
All traffic goes to 127.0.0.1. The machine should be otherwise idle: compare ratios, not absolutes.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path (see benchmarks/extender.py).
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import argparse
import csv
import http.client
import importlib.util
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

HERE = Path(__file__).resolve().parent
VERBS = ("filter", "prioritize")
SHAPES = (1, 2, 4, 8)
TEMPLATE = HERE.parent / "tests/data/kube/extender-filter-cache.json"


FLEETS = ("synthetic", "mixed")


def synthetic_snapshot(nodes: int) -> dict[str, Any]:
    """The synthetic cluster benchmarks/extender.py measures (loaded from that file, not copied)."""
    return sibling("extender").synthetic_cluster(nodes)  # type: ignore[no-any-return]


def fleet_snapshot(fleet: str, nodes: int) -> dict[str, Any]:
    """The snapshot document of a fleet: "synthetic" or "mixed" (benchmarks/mixed_fleet.py)."""
    if fleet == "mixed":
        return sibling("mixed_fleet").mixed_fleet(nodes)  # type: ignore[no-any-return]
    return synthetic_snapshot(nodes)


def body(
    names: list[str],
    gpus: int,
    memory_gib: int | None = None,
    replica: int = 0,
    cpu_milli: int | None = None,
    nvlink: bool = False,
    model: str | None = None,
) -> str:
    """The captured kube-scheduler filter body with these candidates and a pod of ``gpus`` GPUs; its
    ``replica``-th pod (own name and uid, as the pods of one Deployment differ); optionally declaring
    VRAM, asking ``cpu_milli`` CPU (and 4 GiB of memory per CPU), requiring NVLink, or serving ``model``
    (vLLM's ``--model``)."""
    doc = json.loads(TEMPLATE.read_text())
    meta = doc["Pod"]["metadata"]
    meta["name"] = f"{meta.get('name', 'pod')}-{gpus}-{replica}"
    meta["uid"] = f"00000000-0000-4000-8000-{gpus:04d}{replica:08d}"
    container = doc["Pod"]["spec"]["containers"][0]
    container["resources"]["limits"]["nvidia.com/gpu"] = str(gpus)
    container["resources"]["requests"]["nvidia.com/gpu"] = str(gpus)
    annotations = doc["Pod"]["metadata"].setdefault("annotations", {})
    if memory_gib is not None:  # a new pod shape: kube-scheduler's next pending pod
        annotations["gpu-advisor.io/gpu-memory"] = f"{memory_gib}Gi"
    if nvlink:
        annotations["gpu-advisor.io/interconnect"] = "nvlink"
    if model is not None:
        container["args"] = [f"--model={model}"]
    if cpu_milli is not None:
        for part in ("requests", "limits"):
            container["resources"][part] |= {"cpu": f"{cpu_milli}m", "memory": f"{4 * cpu_milli // 1000}Gi"}
    doc["NodeNames"] = names
    return json.dumps(doc, separators=(",", ":"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def post(port: int, path: str, text: str) -> tuple[float, bytes]:
    """(seconds, reply) of one POST over a fresh loopback connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    started = time.perf_counter()
    conn.request("POST", path, text.encode(), {"Content-Type": "application/json"})
    reply = conn.getresponse()
    data = reply.read()
    took = time.perf_counter() - started
    conn.close()
    if reply.status != 200:
        raise SystemExit(f"{path} answered {reply.status}: {data[:300]!r}")
    return took, data


def rss_mib(pid: int) -> tuple[float, float]:
    """(resident, peak resident) MiB of a process, from /proc."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


@contextmanager
def server(argv: list[str], port: int, timeout: float = 120.0) -> Iterator[tuple[subprocess.Popen[bytes], float]]:
    """A server process, yielded with its start-up seconds once /readyz answers 200; stopped after."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"server exited: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/readyz")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            if time.perf_counter() - started > timeout:
                raise SystemExit(f"server not ready after {timeout:.0f} s")
            time.sleep(0.05)
        yield proc, time.perf_counter() - started
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def wrk(port: int, path: str, bodies_file: Path, connections: int, duration: float) -> dict[str, float]:
    seconds = max(1, round(duration))
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s", "-s", str(HERE / "wire.lua")]
    argv += [f"http://127.0.0.1:{port}", "--", str(bodies_file)]
    out = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "WIRE_PATH": path}, check=False)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("WIRE ")), None)
    if line is None:
        raise SystemExit(f"wrk printed no summary:\n{out.stdout}\n{out.stderr}")
    found = json.loads(line[5:])
    if found["errors"] or found["non2xx"]:
        raise SystemExit(f"wrk saw errors against {path}: {found}")
    return {
        "rps": found["requests"] / (found["duration_us"] / 1e6),
        "p50_ms": found["p50_us"] / 1e3,
        "p99_ms": found["p99_us"] / 1e3,
    }


def measure(
    args: argparse.Namespace, snapshot: Path, work: Path, names: list[str], fleet: str
) -> tuple[list[dict[str, Any]], float]:
    """Every (refresh, names, verb, connections): wrk against the advisor, then against the no-op; and
    the advisor's resident MiB after its refresh runs."""
    rows: list[dict[str, Any]] = []
    rss_after = 0.0
    advisor_port, noop_port = free_port(), free_port()
    for refresh in (False, True):
        argv = [sys.executable, str(HERE / "wire_servers.py"), "advisor", "--snapshot", str(snapshot)]
        argv += ["--port", str(advisor_port)] + (["--refresh", str(args.refresh_every)] if refresh else [])
        with server(argv, advisor_port) as (advisor, _):
            replies: dict[str, str] = {}
            files: dict[int, Path] = {}
            for count in args.counts:
                lines = []
                for k in SHAPES:
                    for verb in VERBS:  # also warms the advisor's memo for these shapes
                        text = body(names[:count], k)
                        replies[f"{verb}:{count}-{k}"] = post(advisor_port, f"/scheduler/{verb}", text)[1].decode()
                    # Eight replicas of each shape, each its own pod (name, uid), asked about in turn.
                    lines += [f"{count}-{k}\t{body(names[:count], k, replica=r)}" for r in range(8)]
                files[count] = work / f"bodies-{count}.txt"
                files[count].write_text("\n".join(lines) + "\n")
            replies_file = work / "replies.json"
            noop_argv = [sys.executable, str(HERE / "wire_servers.py"), "noop", "--replies", str(replies_file)]
            for verb in VERBS:
                # The no-op answers by X-Wire-Reply key; one no-op process per verb keeps keys plain.
                mine = {key.split(":")[1]: text for key, text in replies.items() if key.startswith(verb)}
                replies_file.write_text(json.dumps(mine))
                with server([*noop_argv, "--port", str(noop_port)], noop_port):
                    for count in args.counts:
                        for connections in (1, 8):
                            row = {"fleet": fleet, "refresh": refresh, "names": count, "verb": verb}
                            row["connections"] = connections
                            # A refresh run lasts a refresh interval at least: every run sees one.
                            duration = max(args.duration, args.refresh_every) if refresh else args.duration
                            ports = (advisor_port, noop_port)
                            row |= pair(args, ports, f"/scheduler/{verb}", files[count], connections, duration)
                            rows.append(row)
                            print_row(row)
            if refresh:
                rss_after = rss_mib(advisor.pid)[0]
                print(f"{fleet} fleet: advisor RSS after the refresh runs: {rss_after:.0f} MiB")
    return rows, rss_after


def pair(
    args: argparse.Namespace, ports: tuple[int, int], path: str, bodies: Path, connections: int, duration: float
) -> dict[str, Any]:
    """Advisor then no-op, ``--repeat`` times in turn (a busy machine slows both alike within a
    turn); medians, and the spread of the ratio."""
    turns = [
        (
            wrk(ports[0], path, bodies, connections, duration),
            wrk(ports[1], path, bodies, connections, duration),
        )
        for _ in range(args.repeat)
    ]
    ratios = sorted(n["rps"] / a["rps"] for a, n in turns)
    row: dict[str, Any] = {}
    for i, who in enumerate(("advisor", "noop")):
        for key in ("rps", "p50_ms", "p99_ms"):
            row[f"{who}_{key}"] = statistics.median(turn[i][key] for turn in turns)
    row |= {"ratio": statistics.median(ratios), "ratio_min": ratios[0], "ratio_max": ratios[-1]}
    row["load1"] = os.getloadavg()[0]
    return row


def print_row(row: dict[str, Any]) -> None:
    print(
        f"{row['fleet']:<9} {'yes' if row['refresh'] else 'no':>7} {row['names']:>5} {row['verb']:<10} "
        f"{row['connections']:>2} "
        f"{row['advisor_rps']:>9.0f} {row['advisor_p50_ms']:>7.2f} {row['advisor_p99_ms']:>7.2f} "
        f"{row['noop_rps']:>9.0f} {row['noop_p50_ms']:>7.2f} {row['noop_p99_ms']:>7.2f} "
        f"{row['ratio']:>6.2f}× ({row['ratio_min']:.2f}–{row['ratio_max']:.2f}) load {row['load1']:.1f}",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000, help="nodes in the synthetic cluster (default 5000)")
    parser.add_argument("--duration", type=int, default=3, help="seconds per wrk run (default 3)")
    parser.add_argument("--repeat", type=int, default=3, help="advisor/no-op turns per case (default 3)")
    parser.add_argument("--counts", type=lambda s: [int(x) for x in s.split(",")], default=[1, 100, 500, 5000])
    parser.add_argument(
        "--refresh-every",
        type=float,
        default=5.0,
        help="seconds between telemetry refreshes in the refresh runs, each of which lasts at least this long "
        "(default 5: three times the rate of the Prometheus poll's default 15 s)",
    )
    parser.add_argument(
        "--fleets",
        type=lambda s: [f for f in s.split(",") if f],
        default=list(FLEETS),
        help="fleets to measure, in turn: synthetic, mixed (default both)",
    )
    parser.add_argument("--out", type=Path, default=HERE / "results", help="where the CSV and PNG files go")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed: apt-get install wrk (Debian/Ubuntu) or brew install wrk", file=sys.stderr)
        return 2
    unknown = [f for f in args.fleets if f not in FLEETS]
    if unknown or not args.fleets:
        print(f"--fleets: choose from {', '.join(FLEETS)} (got {', '.join(unknown) or 'none'})", file=sys.stderr)
        return 2
    args.counts = [c for c in args.counts if c <= args.nodes]
    cold = sibling("wire_cold")  # start-up and the cold first calls: benchmarks/wire_cold.py
    rows: list[dict[str, Any]] = []
    fleets: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="wire-bench-") as tmp:
        work = Path(tmp)
        for fleet in args.fleets:
            snapshot, names = cold.write_snapshot(work, args.nodes, fleet)
            seconds, rss = cold.startup(snapshot)
            print(f"{fleet} fleet, gpu-advisor serve --cluster FILE: ready in {seconds:.2f} s, {rss:.0f} MiB resident")
            print(
                f"{'fleet':<9} {'refresh':>7} {'names':>5} {'verb':<10} {'c':>2} {'adv r/s':>9} {'p50 ms':>7} "
                f"{'p99 ms':>7} {'noop r/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'ratio':>7}"
            )
            found, rss_after = measure(args, snapshot, work, names, fleet)
            rows += found
            cold.report(cold.cold_calls(snapshot, names, [c for c in args.counts if c >= 500]))
            fleets.append(
                {
                    "fleet": fleet,
                    "nodes": args.nodes,
                    "startup_s": round(seconds, 2),
                    "rss_ready_mib": round(rss),
                    "rss_after_refresh_runs_mib": round(rss_after),
                    "load1": os.getloadavg()[0],
                }
            )
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(args.out / "wire.csv", rows)
    write_csv(args.out / "wire-fleets.csv", fleets)
    plot = sibling("wire_plot").plot
    for fleet in args.fleets:
        picture = args.out / ("wire.png" if fleet == "synthetic" else f"wire-{fleet}.png")
        plot([r for r in rows if r["fleet"] == fleet], picture, fleet)
        print(f"wrote {picture}")
    for f in fleets:
        print(
            f"{f['fleet']} fleet of {f['nodes']} nodes: start-up {f['startup_s']:.2f} s, {f['rss_ready_mib']} MiB "
            f"resident once ready, {f['rss_after_refresh_runs_mib']} MiB after the refresh runs"
        )
    print(f"wrote {args.out / 'wire.csv'} and {args.out / 'wire-fleets.csv'}")
    return 0


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def sibling(name: str) -> Any:
    """Another script of this folder as a module (the folder is not on sys.path: see the top)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    sys.exit(main())
