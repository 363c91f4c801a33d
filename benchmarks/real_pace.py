"""kube-scheduler's pace on a real control plane: pods bound per second with the printed profile and
the advisor's extender, beside the same profile without its extenders entry, and where the CPU goes.

    python benchmarks/real_pace.py --bin DIR [--kubeconfig K] [--sizes 1000x3000,5000x2000] [--out FILE]

It needs the real binaries, which CI does not have (so no test runs this): build Kubernetes v1.36's
``cmd/kube-apiserver`` and ``cmd/kube-scheduler`` and etcd v3.6 (``go.etcd.io/etcd/server/v3``) from
source, and put ``etcd``, ``kube-apiserver`` and ``kube-scheduler`` in DIR. Missing ones stop the run with
a message. With ``--kubeconfig`` (an admin's) it uses an API server that is already running and needs
only ``kube-scheduler`` from DIR; it reads etcd's and kube-apiserver's CPU if exactly one process of each
name runs on this machine. No other scheduler may serve the ``gpu-advisor`` profile there. Without
``--kubeconfig``, each size gets its own etcd and kube-apiserver on 127.0.0.1, with throwaway
certificates (benchmarks/real_control_plane.py).

Per size: N fake Nodes (8 ``nvidia.com/gpu``, 64 CPUs, 512Gi, Ready), then two configurations, the
profile without the extender first, then with it. For each, the one-GPU pods are created in a new
namespace while no kube-scheduler runs, then kube-scheduler starts on the configuration; a watch records
when each pod is bound, and the pace is the pods bound per second from the first binding to the last.
Then kube-scheduler stops and the pods are deleted at once (nothing else would empty the nodes), so the
second configuration starts on the same empty nodes. The advisor (``gpu-advisor serve --cluster kube``,
mTLS on the verbs as it ships, on the admin kubeconfig, so no RBAC is set up) starts after the first
configuration, so it is not running then. With ``--noop``, between the two, the very same profile runs
against a true no-op extender on the verbs' port (``benchmarks/real_noop.py``: the advisor's server, TLS
and Binding post, none of its thinking), the most any extender served this way could give.

CPU: user + system time of etcd, kube-apiserver, kube-scheduler and gpu-advisor from /proc, sampled
every 0.1 s, from the last sample before the first binding to the first after the last (kube-scheduler's
start-up and informer sync are outside the window); per bound pod. The advisor's resident memory is read
after the last binding. The configurations are the output of ``gpu-advisor scheduler-config`` with
clientConnection.kubeconfig filled in and leader election off. All traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path; the repository root is wanted instead.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import dataclasses
import json
import os
import platform
import subprocess
import tempfile
import threading
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from benchmarks import real_api, real_control_plane, real_noop
from benchmarks.real_pace_figures import (
    Measured,
    SizeResult,
    cpu_ms_per_pod,
    cpu_seconds,
    pods_per_second,
    rss_mib,
    scheduler_config,
    table,
)

PROFILE = "gpu-advisor"
TICKS = os.sysconf("SC_CLK_TCK")
PROXIES = {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"}
ENV = {key: value for key, value in os.environ.items() if key not in PROXIES}


class CpuSampler:
    """Reads each process's CPU seconds every 0.1 s, so the window can be cut at the bindings."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids, self.samples = pids, list[tuple[float, dict[str, float]]]()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _read(self) -> dict[str, float]:
        reading = {}
        for name, pid in self.pids.items():
            try:
                reading[name] = cpu_seconds(Path(f"/proc/{pid}/stat").read_text(), TICKS)
            except OSError:
                continue  # exited: left out of this reading
        return reading

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), self._read()))
            self._stop.wait(0.1)

    def window(self, first: float, last: float) -> tuple[dict[str, float], dict[str, float]]:
        """The last reading at or before ``first`` and the first at or after ``last``."""
        while not self.samples or self.samples[-1][0] < last:
            time.sleep(0.05)
        self._stop.set()
        self._thread.join()
        before = [reading for at, reading in self.samples if at <= first] or [self.samples[0][1]]
        return before[-1], next(reading for at, reading in self.samples if at >= last)


def _tail(path: Path, lines: int = 20) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def _spawn(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as sink:
        return subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=ENV)


_stop = real_control_plane.stop_process


@dataclasses.dataclass
class Setup:
    """What both configurations of a size share."""

    binaries: Path
    kubeconfig: Path
    folder: Path
    api: real_api.Api
    pids: dict[str, int]
    stall_seconds: float
    serve_args: tuple[str, ...] = ()  # more of the advisor's flags (``--serve-arg``), for an A/B run
    kube_binds: bool = False  # ``--kube-binds``: the extender entry without its bindVerb (a split, not as shipped)
    noop: bool = False  # ``--noop``: also the printed profile against a true no-op extender (``real_noop``)


def measure(setup: Setup, config: str, pods: int, tag: str, advisor_pid: int | None) -> Measured:
    """Pods created while no kube-scheduler runs for the profile, then kube-scheduler on ``config``."""
    namespace = f"real-pace-{tag}-{int(time.time())}"
    real_api.create_namespace(setup.api, namespace)
    watch = real_api.BindWatch(setup.api, namespace, real_api.create_pods(setup.api, namespace, pods, PROFILE))
    config_path, log = setup.folder / f"scheduler-{tag}.yaml", setup.folder / f"kube-scheduler-{tag}.log"
    config_path.write_text(config)
    argv = [str(setup.binaries / "kube-scheduler"), f"--config={config_path}", "--bind-address=127.0.0.1"]
    argv += [f"--secure-port={real_control_plane.free_port()}", f"--cert-dir={setup.folder / 'scheduler-certs'}"]
    argv += [f"--authentication-kubeconfig={setup.kubeconfig}", f"--authorization-kubeconfig={setup.kubeconfig}"]
    scheduler = _spawn(argv, log)
    pids = {**setup.pids, "kube-scheduler": scheduler.pid, "harness": os.getpid()}
    if advisor_pid is not None:
        pids["gpu-advisor"] = advisor_pid
    sampler = CpuSampler(pids)
    try:
        times = watch.wait(pods, setup.stall_seconds, lambda: _tail(log))
        before, after = sampler.window(times[0], times[-1])
        rss = None if advisor_pid is None else rss_mib(Path(f"/proc/{advisor_pid}/status").read_text())
    finally:
        watch.close()
        _stop(scheduler)
    real_api.delete_pods(setup.api, namespace)
    return Measured(pods_per_second(times), cpu_ms_per_pod(before, after, pods), times[-1] - times[0], rss)


def start_advisor(setup: Setup, certs: Path, ports: tuple[int, int, int]) -> subprocess.Popen[bytes]:
    """``gpu-advisor serve --cluster kube``, the verbs on mTLS; returns once /readyz says 200."""
    argv = [
        sys.executable,
        "-m",
        "gpu_advisor.cli",
        "serve",
        "--cluster",
        "kube",
        "--kubeconfig",
        str(setup.kubeconfig),
    ]
    argv += ["--tls-cert", str(certs / "tls.crt"), "--tls-key", str(certs / "tls.key")]
    argv += ["--scheduler-client-ca", str(certs / "ca.crt")]
    argv += ["--port", str(ports[0]), "--tls-port", str(ports[1]), "--scheduler-port", str(ports[2])]
    argv += setup.serve_args
    log = setup.folder / "gpu-advisor.log"
    advisor = _spawn(argv, log)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if advisor.poll() is not None:
            raise SystemExit(f"gpu-advisor exited ({advisor.returncode}):\n{_tail(log)}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ports[0]}/readyz", timeout=5) as answer:
                if answer.status == 200:
                    return advisor
        except OSError:
            pass
        time.sleep(0.5)
    _stop(advisor)
    raise SystemExit(f"gpu-advisor not ready after 300 s:\n{_tail(log)}")


def printed_config(certs: Path, scheduler_port: int) -> str:
    """The advisor's certificates and the profile it prints for them."""
    cli = [sys.executable, "-m", "gpu_advisor.cli"]
    subprocess.run([*cli, "certs", "create", "--out", str(certs)], check=True, capture_output=True, env=ENV)
    url = f"https://127.0.0.1:{scheduler_port}/scheduler"
    shown = subprocess.run(
        [*cli, "scheduler-config", "--url", url, "--client-dir", str(certs)],
        check=True,
        capture_output=True,
        text=True,
        env=ENV,
    )
    return shown.stdout


def run_size(args: argparse.Namespace, nodes: int, pods: int, folder: Path) -> SizeResult:
    plane = None if args.kubeconfig else real_control_plane.start(args.bin, folder / "control-plane")
    try:
        kubeconfig = plane.kubeconfig if plane else args.kubeconfig
        pids = plane.pids if plane else real_control_plane.pids_by_name(("etcd", "kube-apiserver"))
        api = real_api.Api(kubeconfig, folder)
        setup = Setup(
            args.bin, kubeconfig, folder, api, pids, args.stall, tuple(args.serve_arg or ()), args.kube_binds, args.noop
        )
        return _both(setup, nodes, pods)
    finally:
        if plane:
            plane.stop()


def _both(setup: Setup, nodes: int, pods: int) -> SizeResult:
    """The fleet, then without the extender, then with it; in a shared cluster the fleet is deleted after."""
    label = f"n{nodes}-{int(time.time())}"
    load = os.getloadavg()  # other work on the machine takes cores from what is measured
    started = time.monotonic()
    real_api.create_nodes(setup.api, [f"gpu-{label}-{i:05d}" for i in range(nodes)], label)
    node_seconds = time.monotonic() - started
    real_api.create_namespace(setup.api, "gpu-advisor")  # where the bind verb keeps its claims Leases
    ports = tuple(real_control_plane.free_port() for _ in range(3))
    printed = printed_config(setup.folder / "advisor-certs", ports[2])
    kubeconfig = str(setup.kubeconfig)
    try:
        requests_before = real_api.request_counts(setup.api)
        without = measure(setup, scheduler_config(printed, kubeconfig, with_extender=False), pods, "without", None)
        without_requests = {
            f"without: {key}": n for key, n in requests_per_pod(setup.api, requests_before, pods).items()
        }
        noop = measure_noop(setup, printed, pods, ports[2]) if setup.noop else None
        advisor = start_advisor(setup, setup.folder / "advisor-certs", (ports[0], ports[1], ports[2]))
        requests_before = real_api.request_counts(setup.api)
        try:
            with_advisor = measure(
                setup,
                scheduler_config(printed, kubeconfig, with_extender=True, kube_binds=setup.kube_binds),
                pods,
                "with",
                advisor.pid,
            )
            served = served_seconds(ports[0]) | requests_per_pod(setup.api, requests_before, pods) | without_requests
        finally:
            _stop(advisor)
    finally:
        real_api.delete_nodes(setup.api, label)
    return SizeResult(
        nodes,
        pods,
        with_advisor,
        without,
        noop=noop,
        extra={"node_creation_seconds": round(node_seconds, 1), "load_average_before": load} | served,
    )


def measure_noop(setup: Setup, printed: str, pods: int, port: int) -> Measured:
    """The printed profile against the no-op extender (``real_noop``) on the verbs' port, its certificates."""
    argv = [sys.executable, "-m", "benchmarks.real_noop", "--kubeconfig", str(setup.kubeconfig)]
    argv += ["--certs", str(setup.folder / "advisor-certs"), "--port", str(port)]
    log = setup.folder / "noop.log"
    noop = _spawn(argv, log)
    try:
        deadline = time.monotonic() + 60
        while not _listening(port):
            if noop.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the no-op extender did not start:\n{_tail(log)}")
            time.sleep(0.2)
        config = scheduler_config(printed, str(setup.kubeconfig), with_extender=True)
        measured = measure(setup, config, pods, "noop", noop.pid)
    finally:
        _stop(noop)
    return dataclasses.replace(measured, connections=_connections(log.read_text(errors="replace")))


def _connections(log: str) -> tuple[int, int] | None:
    """(calls, connections) the no-op served, from the line it prints as it stops."""
    for line in log.splitlines():
        if line.startswith(real_noop.CALLS_LINE):
            words = line.split()
            return int(words[-3]), int(words[-1])
    return None


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def requests_per_pod(api: real_api.Api, before: dict[str, float], pods: int) -> dict[str, float]:
    """kube-apiserver's requests per bound pod during the run with the advisor, by kind (0.05 and up)."""
    after = real_api.request_counts(api)
    per_pod = {key: (count - before.get(key, 0.0)) / pods for key, count in after.items()}
    return {f"api {key}": round(n, 2) for key, n in sorted(per_pod.items()) if n >= 0.05}


def served_seconds(port: int) -> dict[str, float]:
    """The advisor's own time per call by verb (its histogram: from the body read to the answer made),
    mean milliseconds; the rest of kube-scheduler's wait is the wire, TLS and the event loop's queue."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    sums: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples if family.name == "gpu_advisor_extender_seconds" else ():
            if sample.name.endswith(("_sum", "_count")):
                sums[sample.labels["verb"] + sample.name.removeprefix(family.name)] = sample.value
    verbs = {key[: -len("_count")] for key in sums if key.endswith("_count")}
    return {
        f"advisor_{verb}_ms": round(1000 * sums[verb + "_sum"] / sums[verb + "_count"], 3)
        for verb in verbs
        if sums[verb + "_count"]
    } | {f"advisor_{verb}_calls": sums[verb + "_count"] for verb in verbs}


def _sizes(text: str) -> list[tuple[int, int]]:
    pairs = [part.split("x") for part in text.split(",")]
    return [(int(nodes), int(pods)) for nodes, pods in pairs]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", type=Path, required=True, help="folder with etcd, kube-apiserver, kube-scheduler")
    parser.add_argument("--kubeconfig", type=Path, help="an admin kubeconfig of a running API server")
    parser.add_argument("--sizes", type=_sizes, default=_sizes("1000x3000,5000x2000"), help="NODESxPODS,...")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument("--stall", type=float, default=120, help="stop if no pod is bound for this long (s)")
    parser.add_argument(
        "--kube-binds",
        action="store_true",
        help="kube-scheduler binds, not the advisor (to split the cost; not as shipped)",
    )
    parser.add_argument(
        "--noop",
        action="store_true",
        help="also run the printed profile against a true no-op extender (the most any extender could give)",
    )
    parser.add_argument(
        "--serve-arg",
        action="append",
        metavar="ARG",
        help="one more flag for the advisor (repeatable; e.g. --serve-arg=--filter-passes=fitting)",
    )
    args = parser.parse_args()
    names = ("kube-scheduler",) if args.kubeconfig else real_control_plane.BINARIES
    real_control_plane.check_binaries(args.bin, names)
    results = []
    for nodes, pods in args.sizes:
        with tempfile.TemporaryDirectory(prefix="real-pace-") as folder:
            results.append(run_size(args, nodes, pods, Path(folder)))
        print(table(results[-1:]), flush=True)
    order = "without the extender, then " + ("the no-op extender, then " if args.noop else "") + "the advisor"
    print(f"\n{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; {order}\n")
    print(table(results))
    if args.out:
        about = {"cpus": os.cpu_count(), "order": order, "mtls": True}
        args.out.write_text(json.dumps({"about": about, "sizes": [dataclasses.asdict(r) for r in results]}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
