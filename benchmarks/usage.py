"""Time of a usage report of 1,000 GPU pods over 30 days, against a local Prometheus.

    python benchmarks/usage.py [--pods 1000] [--days 30] [--interval 30] [--data DIR]

Backfills kube-state-metrics and DCGM exporter history scraped every ``--interval`` seconds with
``promtool tsdb create-blocks-from openmetrics`` (Debian's ``prometheus`` package; one file per TSDB
block, converted in parallel: ``tests.usage.block_backfill``), starts ``prometheus`` on it at
127.0.0.1, then times
what ``gpu-advisor usage --by label:team`` (and with ``--json``) does: the Prometheus queries
(``extender.sources.usage_history``) and the report (``extender.advice.usage``). Pods ask in turn for
1 H100, 2 H100s, a MIG 3g.40gb slice and a quarter of a time-sliced T4, in 20 namespaces and 7 teams;
each device's SM activity is constant at (n mod 10) × 10 %. Goal: < 10 s. The wall time on a shared
machine measures the neighbours too: it prints the CPU seconds (this process's, and Prometheus's).
With ``--data DIR`` the blocks are kept and reused by the next run with the same pods, days and interval.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # keep this folder's scripts from shadowing the packages they measure
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extender.advice.usage import usage_report
from extender.sources.usage_history import UsageHistory
from tests.rightsize.history import Gpu, gpu_labels, promtool_binary
from tests.telemetry.prometheus_server import PrometheusServer, prometheus_binary
from tests.usage.block_backfill import backfill_blocks
from tests.usage.history import Series, node_series, pod_series

ASKS: tuple[tuple[str, int, str], ...] = (
    ("nvidia_com_gpu", 1, "h100"),
    ("nvidia_com_gpu", 2, "h100"),
    ("nvidia_com_mig_3g_40gb", 1, "mig"),
    ("nvidia_com_gpu", 1, "t4"),
)


def fleet(pods: int) -> tuple[list[Series], list[Gpu]]:
    """The pods' kube-state-metrics series and their devices' DCGM series, 8 devices per node."""
    kube: list[Series] = []
    gpus: list[Gpu] = []
    for n in range(pods):
        resource, count, kind = ASKS[n % len(ASKS)]
        node = f"{kind}-{n // 8:04d}"
        name, labels = f"p{n}-0", {"team": f"team-{n % 7}"}
        kube += pod_series(f"ns-{n % 20}", name, node, resource, count, ("StatefulSet", f"p{n}"), labels)
        for i in range(count):
            gpus.append(Gpu(gpu_labels(node, (n + i) % 8, f"ns-{n % 20}", name), ((n % 10) / 10,), (4096.0,)))
    nodes = {s.labels["node"] for s in kube if s.name == "kube_pod_info"}
    kube += [
        node_series(node, "Tesla-T4", 4, "time-slicing")
        if node.startswith("t4")
        else node_series(node, "NVIDIA-H100-80GB-HBM3")
        for node in sorted(nodes)
    ]
    return kube, gpus


def _run(server: PrometheusServer, end: float, days: float) -> None:
    # The table and CSV leave VRAM peaks out (one pass fewer); --json reads them too.
    for run, vram in (("table, cold", False), ("table, warm", False), ("--json", True)):
        began, client_cpu, server_cpu = time.monotonic(), time.process_time(), server.cpu_seconds()
        pods = UsageHistory(server.url, timeout_s=600).pods(end, days * 86400, vram=vram)
        queried = time.monotonic() - began
        report = usage_report(pods, "label:team", days * 24, "bench")
        total = time.monotonic() - began
        allocated = report.to_dict()["totals"]["allocated_gpu_hours"]
        print(
            f"{run}: {len(pods)} pods, {len(report.tenants)} teams, {allocated:.0f} GPU-hours over {days:g} d: "
            f"{total:.2f} s wall ({queried:.2f} s of Prometheus queries); CPU: client "
            f"{time.process_time() - client_cpu:.2f} s, Prometheus {server.cpu_seconds() - server_cpu:.2f} s; "
            "goal < 10 s",
            flush=True,
        )


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _history(promtool: str, workdir: Path, pods: int, days: float, interval_s: int) -> float:
    """The backfilled window's end: made now, or read back from an earlier run with the same figures."""
    wanted = {"pods": pods, "days": days, "interval_s": interval_s}
    made = workdir / "history.json"
    if made.is_file() and (workdir / "data").is_dir():
        kept = json.loads(made.read_text())
        if {k: kept.get(k) for k in wanted} == wanted:
            print(f"reusing the history backfilled in {kept['backfill_s']:.0f} s", flush=True)
            return float(kept["end"])
    kube, gpus = fleet(pods)
    samples = int(days * 86400 / interval_s)
    start = (int(time.time()) - int(days * 86400) - 3600) // 3600 * 3600
    began, cpu = time.monotonic(), time.process_time() + _children_cpu()
    backfill_blocks(promtool, kube, gpus, start, samples, interval_s, workdir)
    took, cpu = time.monotonic() - began, time.process_time() + _children_cpu() - cpu
    series = len(kube) + len(gpus) * 3
    print(
        f"backfilled {series} series × {samples} samples every {interval_s} s ({series * samples / 1e6:.0f} M samples) "
        f"in {took:.0f} s wall, {cpu:.0f} s CPU",
        flush=True,
    )
    end = start + samples * interval_s
    made.write_text(json.dumps(wanted | {"end": end, "backfill_s": took}))
    return float(end)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--interval", type=int, default=30, help="seconds between scrapes")
    parser.add_argument("--data", type=Path, help="keep the backfilled history in DIR, and reuse it next time")
    args = parser.parse_args()
    prometheus, promtool = prometheus_binary(), promtool_binary()
    if prometheus is None or promtool is None:
        print("needs the prometheus and promtool binaries: apt-get install -y prometheus", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.data or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        end = _history(promtool, workdir, args.pods, args.days, args.interval)
        server = PrometheusServer(
            prometheus,
            workdir,
            [],
            retention="90d",
            flags=["--query.timeout=15m", "--storage.tsdb.max-block-duration=54h"],
        )
        try:
            server.wait_until("vector(1)", timeout_s=300)
            _run(server, end, args.days)
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
