"""Time of a usage report of 1,000 GPU pods over 30 days, against a local Prometheus.

    python benchmarks/usage.py [--pods 1000] [--days 30] [--interval 600] [--data DIR]

Backfills kube-state-metrics and DCGM exporter history with ``promtool tsdb create-blocks-from
openmetrics`` (Debian's ``prometheus`` package), starts ``prometheus`` on it at 127.0.0.1, then times
what ``gpu-advisor usage --by label:team`` does: the Prometheus queries
(``extender.sources.usage_history``) and the report (``extender.advice.usage``). Pods ask in turn for
1 H100, 2 H100s, a MIG 3g.40gb slice and a quarter of a time-sliced T4, in 20 namespaces and 7 teams;
each device's SM activity is constant at (n mod 10) × 10 %. Goal: < 10 s. The wall time on a shared
machine measures the neighbours too: it prints the CPU seconds.
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

from extender.advice.usage import usage_report
from extender.sources.usage_history import UsageHistory
from tests.rightsize.history import Gpu, backfill, gpu_labels, promtool_binary
from tests.telemetry.prometheus_server import PrometheusServer, prometheus_binary
from tests.usage.history import Series, history, node_series, pod_series

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


def _run(url: str, days: float) -> None:
    for run in ("cold", "warm"):
        began, client_cpu = time.monotonic(), time.process_time()
        pods = UsageHistory(url, timeout_s=600).pods(time.time(), days * 86400)
        queried = time.monotonic() - began
        report = usage_report(pods, "label:team", days * 24, "bench")
        total = time.monotonic() - began
        allocated = report.to_dict()["totals"]["allocated_gpu_hours"]
        print(
            f"{run}: {len(pods)} pods, {len(report.tenants)} teams, {allocated:.0f} GPU-hours over {days:g} d: "
            f"{total:.2f} s ({queried:.2f} s of Prometheus queries); "
            f"client CPU {time.process_time() - client_cpu:.2f} s; "
            "goal < 10 s",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--interval", type=int, default=600, help="seconds between samples")
    parser.add_argument("--data", type=Path, help="keep the backfilled history in DIR, and reuse it next time")
    args = parser.parse_args()
    prometheus, promtool = prometheus_binary(), promtool_binary()
    if prometheus is None or promtool is None:
        print("needs the prometheus and promtool binaries: apt-get install -y prometheus", file=sys.stderr)
        return 2
    samples = int(args.days * 86400 / args.interval)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.data or Path(tmp)
        if not (workdir / "data").is_dir():
            workdir.mkdir(parents=True, exist_ok=True)
            kube, gpus = fleet(args.pods)
            start = (int(time.time()) - int(args.days * 86400) - 3600) // 3600 * 3600
            began = time.monotonic()
            backfill(promtool, history(kube, gpus, start, samples, args.interval), workdir)
            took = time.monotonic() - began
            print(f"backfilled {len(kube)} + {len(gpus) * 3} series × {samples} samples in {took:.0f} s")
        server = PrometheusServer(prometheus, workdir, [], retention="90d", flags=["--query.timeout=15m"])
        try:
            server.wait_until("vector(1)", timeout_s=300)
            began = server.cpu_seconds()
            _run(server.url, args.days)
            print(f"Prometheus CPU for both runs: {server.cpu_seconds() - began:.2f} s")
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
