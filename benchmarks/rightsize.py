"""Time of a right-sizing report of 1,000 workloads over 7 days, against a local Prometheus.

    python benchmarks/rightsize.py [--workloads 1000] [--days 7] [--interval 300]

Backfills the history with ``promtool tsdb create-blocks-from openmetrics`` (Debian's ``prometheus``
package), starts ``prometheus`` on it at 127.0.0.1, then times what ``gpu-advisor rightsize`` does: the
Prometheus queries (``extender.sources.gpu_history``) and the report (``extender.advice.rightsize``).
Workloads hold 1, 1, 2 and 4 GPUs in turn; each GPU's SM activity and VRAM follow a daily cycle.
Goal: < 10 s. The wall time on a shared machine measures the neighbours too: it prints the CPU seconds.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # keep this folder's scripts from shadowing the packages they measure
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extender.advice.rightsize import owner_of_name, rightsize
from extender.model.series_map import Directory
from extender.sources.gpu_history import GpuHistory
from tests.rightsize.history import Gpu, backfill, gpu_labels, openmetrics, promtool_binary
from tests.telemetry.prometheus_server import PrometheusServer, prometheus_binary

GPUS_PER_WORKLOAD = (1, 1, 2, 4)
SAFE = "bcdfghjklmnpqrstvwxz2456789"


def _suffix(n: int, width: int) -> str:
    out = ""
    for _ in range(width):
        n, r = divmod(n, len(SAFE))
        out += SAFE[r]
    return out


def fleet(workloads: int, cycle: int) -> list[Gpu]:
    """Deployment pods (``w<n>-<hash>-<id>``) on 8-GPU nodes; workload n's GPUs busy at (n mod 10) × 10 %."""
    gpus, slot = [], 0
    for n in range(workloads):
        pod = f"w{n}-{_suffix(n, 9)}-{_suffix(n, 5)}"
        level = (n % 10) / 10
        day = tuple(level * (0.5 + 0.5 * (i / cycle)) for i in range(cycle))  # a ramp through the day
        for _ in range(GPUS_PER_WORKLOAD[n % len(GPUS_PER_WORKLOAD)]):
            node, index = f"node-{slot // 8:04d}", slot % 8
            gpus.append(Gpu(gpu_labels(node, index, f"team-{n % 20}", pod), day, (1024.0 + 60000 * level,)))
            slot += 1
    return gpus


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--interval", type=int, default=300, help="seconds between samples")
    parser.add_argument("--data", type=Path, help="keep the backfilled history in DIR, and reuse it next time")
    args = parser.parse_args()
    prometheus, promtool = prometheus_binary(), promtool_binary()
    if prometheus is None or promtool is None:
        print("needs the prometheus and promtool binaries: apt-get install -y prometheus", file=sys.stderr)
        return 2
    samples = int(args.days * 86400 / args.interval)
    gpus = fleet(args.workloads, max(1, 86400 // args.interval))
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.data or Path(tmp)
        if not (workdir / "data").is_dir():
            workdir.mkdir(parents=True, exist_ok=True)
            start = (int(time.time()) - int(args.days * 86400) - 3600) // 3600 * 3600
            began = time.monotonic()
            backfill(promtool, openmetrics(gpus, start, samples, args.interval), workdir)
            print(f"backfilled {len(gpus)} GPUs × 3 fields × {samples} samples in {time.monotonic() - began:.1f} s")
        server = PrometheusServer(prometheus, workdir, [], retention="30d", flags=["--query.timeout=15m"])
        try:
            server.wait_until("vector(1)", timeout_s=120)
            for run in ("cold", "warm"):
                began, server_cpu, client_cpu = time.monotonic(), server.cpu_seconds(), time.process_time()
                history = GpuHistory(server.url, timeout_s=600)  # a loaded machine may be slow: measure, not fail
                series = history.series(time.time(), args.days * 86400, Directory())
                queried = time.monotonic() - began
                report = rightsize(series, lambda pod: owner_of_name(*pod.split("/", 1)), args.days * 24, "bench")
                total = time.monotonic() - began
                # CPU seconds too: on a shared machine the wall time measures the neighbours as well.
                cpu = server.cpu_seconds() - server_cpu, time.process_time() - client_cpu
                print(
                    f"{run}: {len(report.advice)} workloads, {len(series)} GPU series over {args.days:g} d: "
                    f"{total:.2f} s ({queried:.2f} s of Prometheus queries); CPU {cpu[0]:.2f} s Prometheus "
                    f"+ {cpu[1]:.2f} s client; goal < 10 s"
                )
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
