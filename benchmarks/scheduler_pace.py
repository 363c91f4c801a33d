"""kube-scheduler's call pattern against the real server: the advisor's CPU per scheduled pod, and the
pace it allows, beside a true no-op in the same run.

    python benchmarks/scheduler_pace.py [--nodes 1000,5000] [--pods 400] [--bind-verb]

Per node count, ``gpu-advisor serve --cluster kube`` runs against an HTTP stand-in for the API server
(benchmarks/pace_apiserver.py) whose fleet is, in turn, HGX H100 nodes with their topology, bare 8-GPU
nodes and 8-GPU nodes shared in the Alibaba convention. This script plays kube-scheduler with the
printed profile: per pod a filter with every node name, then a prioritize with the names that passed
(Go's compact JSON, one kept-alive connection); the pod is bound to the top-scored node and the binding
reaches the advisor through the pods watch of ``--cluster kube``. Pods cycle through whole GPUs (1, 2,
4, 8), Alibaba milli shares and CPU-only pods. ``--fleet bare``: the real-cluster measurement's setup,
8-GPU nodes without topology and one-GPU pods. ``--bind-verb`` (the printed profile's): the advisor
binds (claims a sharing node, posts the binding). The first ``--warm`` pods are not counted.

Printed per node count: the advisor's CPU milliseconds per scheduled pod (user + system time from /proc
across the counted pods, the watch's work on each binding included, read once the process is idle),
the pods per second that CPU allows (one Python process: one core at most), the pods per second of
this closed loop, the time kube-scheduler would wait per pod inside its scheduling cycle (filter and
prioritize; binding runs beside the next cycle), and the resident memory after the run. Then the same
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
import http.client
import importlib.util
import json
import os
import tempfile
import time
from typing import Any

import orjson

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
    spec.loader.exec_module(module)
    return module


wire = sibling("wire")
PaceApiServer = sibling("pace_apiserver").PaceApiServer


def fleet(count: int) -> list[dict[str, Any]]:
    """Node objects as kube-apiserver lists them: HGX H100 with its topology, bare 8-GPU, Alibaba shared."""
    from extender.cluster.state import ANNOTATION_TOPOLOGY
    from extender.model.machines import bundled_machines
    from extender.model.smi_topo import parse_topology_text

    topology = parse_topology_text(bundled_machines()["hgx-h100"]).to_json()
    base = {"cpu": "96", "memory": "393216Mi", "pods": "110"}
    nodes = []
    for i in range(count):
        kinds = FLEETS[CHOSEN["fleet"]][0]
        kind = kinds[i % len(kinds)]
        name = f"{kind}-{i:05d}"
        capacity = base | ({ALIBABA_COUNT: "8", ALIBABA_MILLI: "8000"} if kind == "share" else {"nvidia.com/gpu": "8"})
        notes = {ANNOTATION_TOPOLOGY: topology} if kind == "h100" else {}
        meta = {"name": name, "uid": f"node-{i}", "labels": {"kubernetes.io/hostname": name}, "annotations": notes}
        nodes.append(
            {
                "kind": "Node",
                "apiVersion": "v1",
                "metadata": meta,
                "spec": {},
                "status": {"capacity": capacity, "allocatable": dict(capacity)},
            }
        )
    return nodes


@functools.cache
def _template() -> str:
    return wire.TEMPLATE.read_text()  # type: ignore[no-any-return]


def pod_object(i: int) -> dict[str, Any]:
    """The i-th pending pod as kube-scheduler sends it (the captured filter body's Pod, reshaped)."""
    shapes = FLEETS[CHOSEN["fleet"]][1]
    gpus, milli, cpu = shapes[i % len(shapes)]
    pod = json.loads(_template())["Pod"]
    pod["metadata"] |= {"name": f"pace-{i:06d}", "uid": f"00000000-0000-4000-8000-{i:012d}"}
    resources: dict[str, dict[str, str]] = {"requests": {"cpu": f"{cpu}m", "memory": f"{cpu * 4 // 1000}Gi"}}
    resources["limits"] = dict(resources["requests"])
    if gpus and milli is None:
        resources["requests"]["nvidia.com/gpu"] = resources["limits"]["nvidia.com/gpu"] = str(gpus)
    elif gpus:
        pod["metadata"]["annotations"] = {ALIBABA_MILLI: str(milli), ALIBABA_COUNT: str(gpus)}
    pod["spec"]["containers"][0]["resources"] = resources
    return pod  # type: ignore[no-any-return]


def args_body(pod_json: bytes, names_json: bytes) -> bytes:
    """ExtenderArgs as Go's encoder writes it: fields in order, compact."""
    return b'{"Pod":' + pod_json + b',"Nodes":null,"NodeNames":' + names_json + b"}"


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


class Caller:
    """One kept-alive connection, as kube-scheduler's HTTP client keeps one per extender."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def post(self, path: str, body: bytes, reply_key: str = "") -> Any:
        headers = {"Content-Type": "application/json"} | ({"X-Wire-Reply": reply_key} if reply_key else {})
        self.conn.request("POST", path, body, headers)
        reply = self.conn.getresponse()
        data = reply.read()
        if reply.status != 200:
            raise SystemExit(f"{path} answered {reply.status}: {data[:300]!r}")
        return orjson.loads(data)


def schedule(
    caller: Caller, api: Any, pods: range, names_json: bytes, bind_verb: bool
) -> tuple[dict[int, bytes], float]:
    """kube-scheduler's calls for each pod; the prioritize candidates sent, by pod, and the seconds spent
    waiting for filter and prioritize (inside kube-scheduler's scheduling cycle; binding is not)."""
    sent: dict[int, bytes] = {}
    waited = 0.0
    for i in pods:
        pod = pod_object(i)
        pod_json = orjson.dumps(pod)
        asked = time.perf_counter()
        passed = caller.post("/scheduler/filter", args_body(pod_json, names_json))["NodeNames"] or []
        waited += time.perf_counter() - asked
        if not passed:
            continue  # unschedulable: kube-scheduler parks it
        sent[i] = orjson.dumps(passed)
        asked = time.perf_counter()
        scores = caller.post("/scheduler/prioritize", args_body(pod_json, sent[i]))
        waited += time.perf_counter() - asked
        best = max(scores, key=lambda s: s["Score"])["Host"]  # the advisor gives one node its top score
        if bind_verb:  # the advisor claims the node, records a share's GPU and posts the binding itself
            meta = pod["metadata"]
            api.pods_by_name[f"{meta['namespace']}/{meta['name']}"] = pod
            binding = {"PodName": meta["name"], "PodNamespace": meta["namespace"], "PodUID": meta["uid"], "Node": best}
            error = caller.post("/scheduler/bind", orjson.dumps(binding))["Error"]
            if error:
                raise SystemExit(f"bind {meta['name']}: {error}")
        else:
            api.bind(pod, best)
    return sent, waited


def noop_pass(caller: Caller, pods: range, names_json: bytes, sent: dict[int, bytes], keys: dict[bytes, str]) -> float:
    waited = 0.0
    for i in pods:
        pod_json = orjson.dumps(pod_object(i))
        asked = time.perf_counter()
        caller.post("/scheduler/filter", args_body(pod_json, names_json), "filter")
        if i in sent:
            caller.post("/scheduler/prioritize", args_body(pod_json, sent[i]), keys[sent[i]])
        waited += time.perf_counter() - asked
    return waited


def measure(count: int, pods: int, warm: int, bind_verb: bool, work: Path) -> dict[str, float]:
    nodes = fleet(count)
    names_json = orjson.dumps([n["metadata"]["name"] for n in nodes])
    out: dict[str, float] = {}
    with PaceApiServer(nodes) as api:
        config = api.kubeconfig(work)
        port = wire.free_port()
        argv = [sys.executable, "-m", "gpu_advisor.cli", "serve", "--cluster", "kube", "--kubeconfig", str(config)]
        argv += ["--host", "127.0.0.1", "--port", str(port)]
        with wire.server(argv, port) as (proc, startup):
            caller = Caller(port)
            settle(proc.pid)
            out["ready_rss"] = wire.rss_mib(proc.pid)[0]
            schedule(caller, api, range(warm), names_json, bind_verb)
            settle(proc.pid, api.caught_up)
            cpu, started = cpu_seconds(proc.pid), time.perf_counter()
            sent, waited = schedule(caller, api, range(warm, warm + pods), names_json, bind_verb)
            wall = time.perf_counter() - started
            settle(proc.pid, api.caught_up)
            cpu = cpu_seconds(proc.pid) - cpu
            rss, peak = wire.rss_mib(proc.pid)
        out |= {"startup_s": startup, "cpu_ms": 1000 * cpu / pods, "loop_pods_s": pods / wall, "rss": rss, "peak": peak}
        out["wait_ms"] = 1000 * waited / pods
        out["unschedulable"] = pods - len(sent)
    everything = orjson.loads(names_json)
    keys = {names: f"p{k}" for k, names in enumerate(dict.fromkeys(sent.values()))}
    replies = {
        "filter": json.dumps(
            {"Nodes": None, "NodeNames": everything, "FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": ""},
            separators=(",", ":"),
        )
    }
    for names, key in keys.items():
        replies[key] = json.dumps([{"Host": n, "Score": 0} for n in orjson.loads(names)], separators=(",", ":"))
    (work / "replies.json").write_text(json.dumps(replies))
    port = wire.free_port()
    argv = [sys.executable, str(HERE / "wire_servers.py"), "noop", "--replies", str(work / "replies.json")]
    with wire.server([*argv, "--port", str(port)], port) as (proc, _):
        caller = Caller(port)
        noop_pass(caller, range(warm, warm + min(warm, pods)), names_json, sent, keys)  # its warm-up
        settle(proc.pid)
        cpu, started = cpu_seconds(proc.pid), time.perf_counter()
        noop_waited = noop_pass(caller, range(warm, warm + pods), names_json, sent, keys)
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
            m = measure(count, args.pods, args.warm, args.bind_verb, Path(folder))
        print(
            f"{count:5d} | {m['cpu_ms']:18.2f} | {1000 / max(m['cpu_ms'], 1e-9):13.0f} | {m['loop_pods_s']:11.1f} |"
            f" {m['noop_cpu_ms']:16.2f} | {m['noop_loop_pods_s']:17.1f} | {m['wait_ms']:.2f}, {m['noop_wait_ms']:.2f}"
            f" | {m['ready_rss']:.0f} → {m['rss']:.0f}"
            f"   [start-up {m['startup_s']:.1f} s; {m['unschedulable']:.0f} of {args.pods} pods unschedulable]"
        )
    print(f"load average at end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
