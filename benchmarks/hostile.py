"""The served advisor under hostile dry-runs: /healthz latency and the memory of the process tree.

    python benchmarks/hostile.py [--seconds 20] [--attackers 2]

Starts a real ``gpu-advisor serve`` on 127.0.0.1 and, from ``--attackers`` threads, sends the worst
dry-runs it knows for ``--seconds``: a YAML alias bomb, a snapshot with a 40-GPU node asking for 20
of them, a body of the largest size the endpoint takes, and JSON nested 100,000 deep. Meanwhile one
client asks /healthz every 20 ms over a kept-alive connection and the resident memory of the server
and its children (the dry-run sandbox) is sampled as often. Goal: /healthz p99 < 100 ms; peak RSS of
the tree under the Deployment's 512 MiB limit; no reply ≥ 500.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # keep this folder's scripts from shadowing the packages they measure

MIB = 1024 * 1024
DRY_RUN_BODY_LIMIT = 8 * MIB
POD = {"kind": "Pod", "metadata": {"name": "big", "namespace": "ml"},
       "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "20"}}}]}}  # fmt: skip


def alias_bomb(levels: int = 10) -> bytes:
    """Nine times nine times ... ``lol``: a billion strings from about 600 bytes."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    lines += [
        "kind: Pod",
        "metadata: {name: bomb, labels: {}}",
        f"spec: {{containers: [{{name: c, env: *a{levels - 1}}}]}}",
    ]
    return "\n".join(lines).encode()


def topo_matrix(gpus: int) -> str:
    """nvidia-smi topo -m for ``gpus`` GPUs: NVLink within groups of four, SYS between groups."""
    head = "\t" + "\t".join(f"GPU{i}" for i in range(gpus)) + "\tCPU Affinity\tNUMA Affinity"
    rows = []
    for a in range(gpus):
        cells = ["X" if a == b else ("NV4" if a // 4 == b // 4 else "SYS") for b in range(gpus)]
        rows.append(f"GPU{a}\t" + "\t".join(cells) + f"\t0-63\t{a * 2 // gpus}")
    return "\n".join([head, *rows])


def big_snapshot(gpus: int = 40) -> bytes:
    return json.dumps(
        {"manifest": POD, "snapshot": {"nodes": [{"name": "wide", "topology": topo_matrix(gpus)}]}}
    ).encode()


def max_size_body(limit: int = DRY_RUN_BODY_LIMIT) -> bytes:
    """A snapshot of nodes up to just under the dry-run body limit, each with its own ``nvidia-smi topo
    -m`` matrix to parse and its own labels, so no two nodes share their work (``scoring.alike``)."""
    from extender.model.machines import bundled_machines

    matrix = bundled_machines()["dgx1-v100"]
    node = {"name": "n", "topology": matrix, "labels": {"l0": "0" * 12}}
    one = len(json.dumps(node)) + 16
    count = min(5000, (limit - 4096) // one)
    nodes = [dict(node, name=f"n{i}", labels={"l0": f"{i:012d}"}) for i in range(count)]
    return json.dumps({"manifest": POD, "snapshot": {"nodes": nodes}}).encode()


def deep_body(depth: int = 100_000) -> bytes:
    return b"[" * depth + b"]" * depth


ATTACKS: dict[str, Callable[[], bytes]] = {
    "alias bomb": alias_bomb,
    "40-GPU snapshot": big_snapshot,
    "max-size body": max_size_body,
    "100k-deep JSON": deep_body,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served(*extra: str, log: Path | None = None) -> Iterator[tuple[int, subprocess.Popen[bytes], Path]]:
    """``gpu-advisor serve`` on 127.0.0.1 (simulated cluster); yields (port, process, log file)."""
    port = free_port()
    log = log or Path(tempfile.mkstemp(prefix="gpu-advisor-serve-", suffix=".log")[1])
    with open(log, "wb") as out:
        argv = [sys.executable, "-m", "gpu_advisor.cli", "--log-level", "info", "serve", "--port", str(port), *extra]
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if get(port, "/healthz")[0] == 200:
                        break
                except OSError:
                    time.sleep(0.1)
            else:
                raise RuntimeError(f"gpu-advisor serve did not come up: {log.read_text()}")
            yield port, proc, log
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def get(port: int, path: str, timeout: float = 10) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def post(port: int, path: str, body: bytes, timeout: float = 60) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/yaml"})
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and its children (the dry-run sandbox)."""
    total = 0
    for p in [pid, *children(pid)]:
        try:
            with open(f"/proc/{p}/status", encoding="ascii") as status:
                total += next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            pass
    return total


def children(pid: int) -> list[int]:
    """Direct children, whichever thread started them (the sandbox is started from a worker thread)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with suppress(OSError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def attack(port: int, pid: int, seconds: float, attackers: int) -> dict[str, object]:
    """Attack for ``seconds``; the figures: healthz latencies, peak tree RSS, replies by status."""
    bodies = {name: make() for name, make in ATTACKS.items()}
    stop = threading.Event()
    latencies: list[float] = []
    peak = [0]
    statuses: dict[str, dict[int, int]] = {name: {} for name in bodies}

    def watch() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while not stop.is_set():
            started = time.perf_counter()
            conn.request("GET", "/healthz")
            conn.getresponse().read()
            latencies.append(time.perf_counter() - started)
            peak[0] = max(peak[0], tree_rss(pid))
            time.sleep(0.02)
        conn.close()

    def hammer(offset: int) -> None:
        names = list(bodies)
        n = offset
        while not stop.is_set():
            name = names[n % len(names)]
            n += 1
            try:
                status, _ = post(port, "/v1/dry-run", bodies[name])
            except OSError:
                status = 0
            statuses[name][status] = statuses[name].get(status, 0) + 1

    threads = [threading.Thread(target=watch)] + [threading.Thread(target=hammer, args=(i,)) for i in range(attackers)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return {"latencies": latencies, "peak_rss": peak[0], "statuses": statuses}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--attackers", type=int, default=2)
    args = parser.parse_args()
    with served() as (port, proc, log):
        idle = tree_rss(proc.pid)
        figures = attack(port, proc.pid, args.seconds, args.attackers)
        text = log.read_text(errors="replace")
    lat = figures["latencies"]
    assert isinstance(lat, list)
    print(f"/healthz under attack: {len(lat)} calls, p50 {statistics.median(lat) * 1000:.1f} ms, "
          f"p99 {percentile(lat, 0.99) * 1000:.1f} ms, max {max(lat) * 1000:.1f} ms")  # fmt: skip
    print(f"RSS of server + sandbox: idle {idle / MIB:.0f} MiB, peak {int(figures['peak_rss']) / MIB:.0f} MiB")  # type: ignore[call-overload]
    for name, counts in figures["statuses"].items():  # type: ignore[attr-defined]
        print(f"  {name:16} {len(ATTACKS[name]()):>10,} bytes  replies {dict(sorted(counts.items()))}")
    print(f"tracebacks in the server log: {text.count('Traceback')}")
    os.unlink(log)


if __name__ == "__main__":
    main()
