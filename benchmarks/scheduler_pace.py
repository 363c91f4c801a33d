"""kube-scheduler's call pattern against the real server: the advisor's CPU per scheduled pod, and the
pace it allows, beside a true no-op in the same run.

    python benchmarks/scheduler_pace.py [--nodes 1000,5000] [--pods 400] [--bind-verb]

Per node count, ``gpu-advisor serve --cluster kube`` runs against an HTTP stand-in for the API server
(benchmarks/pace_apiserver.py) whose fleet is, in turn, HGX H100 nodes with their topology, bare 8-GPU
nodes and 8-GPU nodes shared in the Alibaba convention. This script plays kube-scheduler with the
printed profile: per pod a filter with the names kube-scheduler would send (the nodes its own filters
pass, in a new order every call: benchmarks/pace_scheduler.py; ``--same-order``: every node, one order),
then a prioritize with the names that passed (Go's compact JSON, one kept-alive connection); the pod is
bound to the top-scored node and the binding
reaches the advisor through the pods watch of ``--cluster kube``. Pods cycle through whole GPUs (1, 2,
4, 8), Alibaba milli shares and CPU-only pods. ``--fleet bare``: the real-cluster measurement's setup,
8-GPU nodes without topology and one-GPU pods. ``--bind-verb`` (the printed profile's): the advisor
binds (claims a sharing node, posts the binding). The first ``--warm`` pods are not counted.

Printed per node count: the advisor's CPU milliseconds per scheduled pod (user + system time from /proc
across the counted pods, the watch's work on each binding included, read once the process is idle),
the pods per second that CPU allows (one Python process: one core at most), the pods per second of
this closed loop, the time kube-scheduler would wait per pod inside its scheduling cycle (filter and
prioritize; binding runs beside the next cycle), and the resident memory (VmRSS) of the served advisor
process once ready and after the run, idle past its periodic heap trim. Then the same
loop against a true no-op (benchmarks/wire_servers.py ``noop``: pre-built answers) sending the very
bodies the advisor was sent. All traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path (see benchmarks/extender.py).
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import argparse
import functools
import importlib.util
import json
import os
import subprocess
import tempfile
import time
from typing import Any

HERE = Path(__file__).resolve().parent
ALIBABA_MILLI, ALIBABA_COUNT = "alibabacloud.com/gpu-milli", "alibabacloud.com/gpu-count"
# (GPUs, milli of each: None for whole GPUs, CPU milli): the cycle of pods kube-scheduler is handed
Shape = tuple[int, int | None, int]
SHAPES: list[Shape] = [
    (1, None, 4000),
    (1, 500, 2000),
    (0, None, 2000),
    (2, None, 8000),
    (1, None, 4000),
    (1, 250, 1000),
]
SHAPES += [(4, None, 16000), (0, None, 500), (1, 500, 2000), (8, None, 32000), (1, None, 4000), (1, 700, 2000)]
# --fleet: node kinds in turn, and the pods' shapes. "bare": the real-cluster measurement's setup, 8-GPU
# nodes without a node agent and one-GPU pods.
FLEETS: dict[str, tuple[tuple[str, ...], list[Shape]]] = {
    "mixed": (("h100", "gpu", "share"), SHAPES),
    "bare": (("gpu",), [(1, None, 100)]),
}
CHOSEN = {"fleet": "mixed"}


def sibling(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a dataclass reads its module's annotations there
    spec.loader.exec_module(module)
    return module


wire = sibling("wire")
TRIM_EVERY_S = importlib.import_module("gpu_advisor.memory").TRIM_EVERY_S
PaceApiServer = sibling("pace_apiserver").PaceApiServer
side = sibling("pace_scheduler")
calibration = sibling("pace_calibration")


def fleet(count: int) -> list[dict[str, Any]]:
    """Node objects as kube-apiserver lists them: HGX H100 with its topology, bare 8-GPU, Alibaba shared;
    each shaped as the real control plane's fake nodes (the captured filter body's Node: labels, conditions,
    nodeInfo, the ``managedFields`` of its creation and of its status), as big as kube-apiserver sends it."""
    from extender.cluster.state import ANNOTATION_TOPOLOGY
    from extender.model.machines import bundled_machines
    from extender.model.smi_topo import parse_topology_text

    topology = parse_topology_text(bundled_machines()["hgx-h100"]).to_json()
    base = {"cpu": "96", "ephemeral-storage": "500Gi", "memory": "393216Mi", "pods": "110"}
    nodes = []
    for i in range(count):
        kinds = FLEETS[CHOSEN["fleet"]][0]
        kind = kinds[i % len(kinds)]
        name = f"{kind}-{i:05d}"
        capacity = base | ({ALIBABA_COUNT: "8", ALIBABA_MILLI: "8000"} if kind == "share" else {"nvidia.com/gpu": "8"})
        notes = {ANNOTATION_TOPOLOGY: topology} if kind == "h100" else {}
        nodes.append(node_object(name, f"00000000-0000-4000-9000-{i:012d}", capacity, notes))
    return nodes


def node_object(name: str, uid: str, capacity: dict[str, str], notes: dict[str, str]) -> dict[str, Any]:
    """One Node as the captured filter body's (tests/data/kube/extender-filter-nocache.json), renamed, with
    ``capacity`` and the annotations ``notes``, and the managedFields that name each of them."""
    node = json.loads(_node_template())
    meta, status = node["metadata"], node["status"]
    meta |= {"name": name, "uid": uid, "resourceVersion": "1000"}
    meta["labels"] = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "real-pace": "pace"}
    created: dict[str, Any] = {"f:labels": {".": {}, **{f"f:{k}": {} for k in meta["labels"]}}}
    if notes:
        meta["annotations"] = notes
        created["f:annotations"] = {".": {}, **{f"f:{k}": {} for k in notes}}
    meta["managedFields"][0]["fieldsV1"]["f:metadata"] = created
    fields: dict[str, Any] = {".": {}, **{f"f:{k}": {} for k in capacity}}
    meta["managedFields"][1]["fieldsV1"]["f:status"] |= {"f:allocatable": fields, "f:capacity": dict(fields)}
    status["capacity"], status["allocatable"] = capacity, dict(capacity)
    return {"kind": "Node", "apiVersion": "v1", **node}


@functools.cache
def _node_template() -> str:
    nodes = json.loads((HERE.parent / "tests/data/kube/extender-filter-nocache.json").read_text())["Nodes"]
    return json.dumps(nodes["items"][0])


@functools.cache
def _template() -> str:
    return wire.TEMPLATE.read_text()  # type: ignore[no-any-return]


def pod_object(i: int) -> dict[str, Any]:
    """The i-th pending pod as kube-scheduler sends it (the captured filter body's Pod, reshaped)."""
    shapes = FLEETS[CHOSEN["fleet"]][1]
    gpus, milli, cpu = shapes[i % len(shapes)]
    pod = json.loads(_template())["Pod"]
    pod["metadata"] |= {"name": f"pace-{i:06d}", "uid": f"00000000-0000-4000-8000-{i:012d}"}
    pod["spec"]["schedulerName"] = "gpu-advisor"  # the printed profile's: the bind verb binds only its pods
    resources: dict[str, dict[str, str]] = {"requests": {"cpu": f"{cpu}m", "memory": f"{cpu * 4 // 1000}Gi"}}
    resources["limits"] = dict(resources["requests"])
    if gpus and milli is None:
        resources["requests"]["nvidia.com/gpu"] = resources["limits"]["nvidia.com/gpu"] = str(gpus)
    elif gpus:
        pod["metadata"]["annotations"] = {ALIBABA_MILLI: str(milli), ALIBABA_COUNT: str(gpus)}
    pod["spec"]["containers"][0]["resources"] = resources
    return pod  # type: ignore[no-any-return]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settle(pid: int, caught_up: Any = lambda: True, quiet_s: float = 0.3, timeout_s: float = 60.0) -> None:
    """Wait until every binding went out on the watch and the process spends no more CPU."""
    deadline = time.monotonic() + timeout_s
    while not caught_up() and time.monotonic() < deadline:
        time.sleep(0.02)
    last = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(quiet_s)
        now = cpu_seconds(pid)
        if now == last:
            return
        last = now


def pod_of(i: int) -> tuple[dict[str, Any], int, int]:
    """The i-th pod, the whole ``nvidia.com/gpu`` it asks for (kube-scheduler counts those) and its CPU."""
    gpus, milli, cpu = FLEETS[CHOSEN["fleet"]][1][i % len(FLEETS[CHOSEN["fleet"]][1])]
    return pod_object(i), gpus if milli is None else 0, cpu


def kube_view(nodes: list[dict[str, Any]], same_order: bool) -> Any:
    names = [n["metadata"]["name"] for n in nodes]
    gpus = {n["metadata"]["name"]: int(n["status"]["capacity"].get("nvidia.com/gpu", 0)) for n in nodes}
    cpu = {n["metadata"]["name"]: 1000 * int(n["status"]["capacity"]["cpu"]) for n in nodes}
    return side.Kube(names, side.Room(gpus, cpu), same_order)


def served_ports(work: Path, mtls: bool) -> tuple[int, int, Any]:
    """The advisor's plain port, the port of its verbs and the client's TLS context (None: plain HTTP)."""
    port = wire.free_port()
    if not mtls:
        return port, port, None
    certs = work / "certs"
    cli = [sys.executable, "-m", "gpu_advisor.cli", "certs", "create", "--out", str(certs)]
    subprocess.run(cli, check=True, capture_output=True)
    return port, wire.free_port(), side.client_tls(certs)


def served_tls(work: Path, mtls: bool, verbs_port: int) -> list[str]:
    """serve's flags: the verbs over mTLS on their own port, as shipped; or on the plain port."""
    if not mtls:
        return ["--insecure-scheduler-verbs"]
    certs = work / "certs"
    return [
        *("--tls-cert", str(certs / "tls.crt"), "--tls-key", str(certs / "tls.key")),
        *("--tls-port", str(wire.free_port()), "--scheduler-port", str(verbs_port)),
        *("--scheduler-client-ca", str(certs / "ca.crt")),
    ]


def measure(
    count: int, pods: int, warm: int, bind_verb: bool, same_order: bool, work: Path, mtls: bool = True
) -> dict[str, float]:
    nodes = fleet(count)
    kube = kube_view(nodes, same_order)
    counted = range(warm, warm + pods)
    out: dict[str, float] = {}
    with PaceApiServer(nodes) as api:
        config = api.kubeconfig(work)
        port, verbs_port, tls = served_ports(work, mtls)
        argv = [sys.executable, "-m", "gpu_advisor.cli", "serve", "--cluster", "kube", "--kubeconfig", str(config)]
        argv += ["--host", "127.0.0.1", "--port", str(port), *served_tls(work, mtls, verbs_port)]
        with wire.server(argv, port) as (proc, startup):
            caller = side.Caller(verbs_port, tls)
            settle(proc.pid)
            out["ready_rss"] = wire.rss_mib(proc.pid)[0]
            side.schedule(caller, api, range(warm), pod_of, kube, bind_verb)
            settle(proc.pid, api.caught_up)
            cpu, started = cpu_seconds(proc.pid), time.perf_counter()
            waited = side.schedule(caller, api, counted, pod_of, kube, bind_verb)
            wall = time.perf_counter() - started
            settle(proc.pid, api.caught_up)
            cpu = cpu_seconds(proc.pid) - cpu
            time.sleep(TRIM_EVERY_S + 0.5)  # idle past the advisor's periodic heap trim (gpu_advisor.memory)
            rss, peak = wire.rss_mib(proc.pid)  # the served advisor process's own /proc/PID/status
        out |= {"startup_s": startup, "cpu_ms": 1000 * cpu / pods, "loop_pods_s": pods / wall, "rss": rss, "peak": peak}
        out["wait_ms"] = 1000 * waited / pods
        out["unschedulable"] = sum(1 for i in counted if not kube.passed.get(i))
    (work / "replies.json").write_text(json.dumps(side.noop_replies(kube)))
    port = wire.free_port()
    argv = [sys.executable, str(HERE / "wire_servers.py"), "noop", "--replies", str(work / "replies.json")]
    with wire.server([*argv, "--port", str(port)], port) as (proc, _):
        caller = side.Caller(port)
        side.noop_pass(caller, range(warm, warm + min(warm, pods)), pod_of, kube)  # its warm-up
        settle(proc.pid)
        cpu, started = cpu_seconds(proc.pid), time.perf_counter()
        noop_waited = side.noop_pass(caller, counted, pod_of, kube)
        wall = time.perf_counter() - started
        settle(proc.pid)
        cpu = cpu_seconds(proc.pid) - cpu
    out |= {
        "noop_cpu_ms": 1000 * cpu / pods,
        "noop_loop_pods_s": pods / wall,
        "noop_wait_ms": 1000 * noop_waited / pods,
    }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1000,5000", help="node counts, comma-separated")
    parser.add_argument("--pods", type=int, default=400, help="pods counted per node count")
    parser.add_argument("--warm", type=int, default=2 * len(SHAPES), help="pods scheduled first, not counted")
    parser.add_argument("--fleet", choices=sorted(FLEETS), default="mixed", help="mixed (default) or bare")
    parser.add_argument("--bind-verb", action="store_true", help="bind through /scheduler/bind (the printed profile)")
    parser.add_argument(
        "--same-order", action="store_true", help="send every node in one order every call (not as kube-scheduler does)"
    )
    parser.add_argument(
        "--plain", action="store_true", help="call the verbs over plain HTTP (default: mTLS, as the printed profile)"
    )
    args = parser.parse_args(argv)
    CHOSEN["fleet"] = args.fleet
    if args.pods < 1 or args.warm < 0:
        parser.error("--pods must be at least 1 and --warm at least 0")
    for key in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        os.environ.pop(key, None)  # the server reads the kubeconfig given, never in-cluster credentials
    print(f"load average at start: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    print(
        "nodes | advisor CPU ms/pod | pods/s by CPU | loop pods/s | no-op CPU ms/pod | no-op loop pods/s"
        " | in-cycle wait ms/pod: advisor, no-op | RSS MiB ready → after"
    )
    for count in (int(n) for n in args.nodes.split(",")):
        with tempfile.TemporaryDirectory() as folder:
            m = measure(count, args.pods, args.warm, args.bind_verb, args.same_order, Path(folder), not args.plain)
        print(
            f"{count:5d} | {m['cpu_ms']:18.2f} | {1000 / max(m['cpu_ms'], 1e-9):13.0f} | {m['loop_pods_s']:11.1f} |"
            f" {m['noop_cpu_ms']:16.2f} | {m['noop_loop_pods_s']:17.1f} | {m['wait_ms']:.2f}, {m['noop_wait_ms']:.2f}"
            f" | {m['ready_rss']:.0f} → {m['rss']:.0f}"
            f"   [start-up {m['startup_s']:.1f} s; {m['unschedulable']:.0f} of {args.pods} pods unschedulable]"
        )
        estimate = calibration.real_ratio_estimate(count, m["cpu_ms"])
        if estimate is not None and args.fleet == "bare" and args.bind_verb and not args.plain:
            print(
                f"      estimated ratio on a real 2-core control plane (benchmarks/pace_calibration.py): {estimate:.2f}"
            )
    print(f"load average at end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
