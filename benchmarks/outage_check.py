"""The outage check, modelled: kube-scheduler's calls against real ``gpu-advisor serve --cluster kube``
replicas over an HTTP-level fake API server, while replicas are killed, restarted or rolled.

What a real cluster check does with one openb sample (a folder with ``nodes.json`` and ``pods.yaml`` in
the Alibaba GPU-share convention, as the trace folder's ``realk8s-seed42``): every pod is created at once
and scheduled the way kube-scheduler v1.36 runs the printed profile (``gpu-advisor scheduler-config``):

- one scheduling cycle at a time: filter with every node name; one node passed: it is the pick
  (prioritize is skipped); several: prioritize, and the top score wins; a failing filter call (the
  advisor away: the entry is not ignorable) or no node passing fails the attempt, and the pod goes to
  backoff (1, 2, 4 … s, at most ``podMaxBackoffSeconds`` 5);
- binding runs asynchronously, several at once, through the bind verb; a refused binding sends the pod
  back to backoff;
- calls go through a Service to the replicas' extender ports (HTTPS, kube-scheduler's client certificate):
  to the replicas that are up and ready (as kube-proxy routes to ready endpoints), one kept while it is
  ready (the manifests' ``sessionAffinity: ClientIP``), or with ``--round-robin`` call by call, so that
  consecutive calls of one pod may reach different replicas (a binding a replica did not approve is then
  refused, and the pod placed again).

Then, after ``--outage-at`` of the pods are bound: ``kill`` SIGKILLs one replica and starts it again
``--down`` seconds later; ``kill-all`` does that to every replica (the single-advisor check); ``roll``
replaces the replicas one after the other as the manifests' rolling upgrade does (a new one, ready and
routed to; then an old one SIGTERMed: not ready, drained, stopped).

Printed: pods bound, nodes over-committed (a node whose bound pods, packed best-fit in bind order onto
its GPUs of 1000 milli, leave a pod with no GPU that holds it), pods bound while no replica was up, the
longest wait from the advisor's return to a pod's binding, failed calls, writes to Nodes the API server
received (none: the claims are Leases), and unallocated GPU % — with the same run without the outage
beside it.

    python -m benchmarks.outage_check TRACES/realk8s-seed42 --replicas 2 --mode kill
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from benchmarks.outage_model import Counted, overcommitted_nodes, unallocated_percent
from benchmarks.outage_replicas import Replica, Service, kubeconfig, roll, wait_for
from tests.fakes.apiserver import FakeApiServer
from webhook.certs import create_certs

MAX_BACKOFF_S = 5.0  # the printed profile's podMaxBackoffSeconds


@dataclass
class Queued:
    pod: dict[str, Any]
    index: int
    ready_at: float = 0.0
    attempts: int = 0
    failed_while_away: bool = False


class Scheduler:
    """kube-scheduler's loop as the printed profile runs it (see the module's docstring)."""

    def __init__(self, service: Service, fake: FakeApiServer, nodes: list[str], give_up_after: int = 4) -> None:
        self.service, self.fake, self.nodes, self.give_up_after = service, fake, nodes, give_up_after
        self.queue: list[Queued] = []
        self.binding = ThreadPoolExecutor(16)
        self.bound_at: dict[str, float] = {}
        self.waited: set[str] = set()  # pods with an attempt failed because no advisor answered
        self.refused: dict[str, int] = {}  # bindings refused as kube-scheduler would not make them, by reason
        self.lock = threading.Lock()
        self.in_flight = 0
        # With pods created one at a time, creation holds at ``hold_at`` pods bound until ``outage_begun``:
        # the outage then always falls between two pods, however slow the machine (a loaded one could
        # otherwise create and bind the rest before the outage thread got to kill anything).
        self.hold_at: int | None = None
        self.outage_begun = threading.Event()

    def run(self, pods: list[dict[str, Any]], deadline_s: float, rate: float, until: threading.Event) -> None:
        """Pods arrive ``rate`` a second, or with ``rate`` 0 one at a time, each once the one before is
        bound or has failed an attempt (as the real check creates them: waiting for each to be bound or
        reported unschedulable); the loop ends when every pod is bound or given up and ``until`` is set
        (the outage is over)."""
        start = time.monotonic()
        later = float("inf")
        self.queue = [Queued(p, i, ready_at=start + i / rate if rate else later) for i, p in enumerate(pods)]
        if self.queue and not rate:
            self.queue[0].ready_at = start
        end = start + deadline_s
        while time.monotonic() < end:
            with self.lock:
                now = time.monotonic()
                if not rate:
                    self._release_next(now)
                ready = [q for q in self.queue if q.ready_at <= now]
                if not self.queue and not self.in_flight and until.is_set():
                    break
            if not ready:
                time.sleep(0.01)
                continue
            item = min(ready, key=lambda q: q.index)
            with self.lock:
                self.queue.remove(item)
            self._attempt(item)
        self.binding.shutdown(wait=True)

    def _release_next(self, now: float) -> None:
        """Under the lock: the first pod not yet created is, once every pod before it is bound or tried."""
        waiting = [q for q in self.queue if q.ready_at == float("inf")]
        if not waiting:
            return
        first = min(waiting, key=lambda q: q.index)
        settled = all(q.attempts or q.index > first.index for q in self.queue if q is not first)
        held = self.hold_at is not None and len(self.bound_at) >= self.hold_at and not self.outage_begun.is_set()
        if settled and not self.in_flight and not held:
            first.ready_at = now

    def _retry(self, item: Queued, away: bool) -> None:
        item.attempts += 1
        item.failed_while_away |= away
        if away:
            self.waited.add(_key(item.pod))
        elif item.attempts >= self.give_up_after:
            return  # reported unschedulable
        item.ready_at = time.monotonic() + min(2 ** (item.attempts - 1), MAX_BACKOFF_S)
        with self.lock:
            self.queue.append(item)

    def _attempt(self, item: Queued) -> None:
        reply = self.service.call("filter", {"Pod": item.pod, "NodeNames": self.nodes})
        if reply is None or reply.get("Error"):
            self._retry(item, away=True)
            return
        passed = reply.get("NodeNames") or []
        if not passed:
            self._retry(item, away=False)
            return
        chosen = passed[0]
        if len(passed) > 1:
            scores = self.service.call("prioritize", {"Pod": item.pod, "NodeNames": passed})
            if scores:  # a failing prioritize is ignored: kube-scheduler's own plugins pick
                chosen = max(scores, key=lambda s: (s["Score"], -passed.index(s["Host"])))["Host"]
        with self.lock:
            self.in_flight += 1
        self.binding.submit(self._bind, item, chosen)

    def _bind(self, item: Queued, node: str) -> None:
        meta = item.pod["metadata"]
        body = {"PodName": meta["name"], "PodNamespace": meta["namespace"], "PodUID": meta["uid"], "Node": node}
        reply = self.service.call("bind", body)
        try:
            if reply is not None and not reply.get("Error"):
                self.bound_at[_key(item.pod)] = time.monotonic()
            else:
                if reply is not None and str(reply["Error"]).startswith("refused to bind"):
                    why = "not-approved" if "no filter or prioritize answer" in reply["Error"] else "constraints"
                    with self.lock:
                        self.refused[why] = self.refused.get(why, 0) + 1
                self._retry(item, away=reply is None or "not synced" in str(reply.get("Error")))
        finally:
            with self.lock:
                self.in_flight -= 1


def _key(pod: dict[str, Any]) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def load_sample(sample: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A folder's Node and Pod objects (``nodes.json``, ``pods.yaml``), or a whole openb trace when ``sample``
    names its pod list (``openb_pod_list_default.csv``): every GPU node, the pods of seed 42's shipped
    arrival order until 98 % of the GPU capacity has arrived (as the whole-trace real check ran it)."""
    if sample.is_dir():
        nodes = json.loads((sample / "nodes.json").read_text())["items"]
        return nodes, yaml.safe_load((sample / "pods.yaml").read_text())["items"]
    from extender.advice.replay import openb
    from extender.advice.replay.advisor_policy import replay_node_object, replay_pod_object

    specs = openb.load_nodes(sample.parent / "openb_node_list_gpu_node.csv")
    trace = sample.stem.removeprefix("openb_pod_list_")
    order = openb.load_shipped_orders(sample.parent.parent, trace, openb.load_pods(sample), len(specs))[42]
    capacity, arrived, pods = 1000 * sum(n.gpu_count for n in specs), 0, []
    for i, pod in enumerate(order.pods):
        if arrived + pod.shape.gpu_request > 0.98 * capacity:
            break
        arrived += pod.shape.gpu_request
        pods.append(replay_pod_object(pod.shape, f"a{i:05d}-{pod.name}".lower()))
    return [replay_node_object(n.name, n.model, n.cpu_milli, n.memory_mib, n.gpu_count) for n in specs], pods


def run(
    sample: Path,
    replicas: int,
    mode: str,
    outage_at: float,
    down_s: float,
    rate: float = 30.0,
    round_robin: bool = False,
) -> dict[str, Any]:
    nodes, pods = load_sample(sample)
    with FakeApiServer() as fake, tempfile.TemporaryDirectory() as tmp:
        for node in nodes:
            fake.put("nodes", node)
        for pod in pods:
            pod["metadata"]["uid"] = f"uid-{pod['metadata']['name']}"
            fake.put("pods", pod)
        config = Path(tmp) / "kubeconfig"
        config.write_text(json.dumps(kubeconfig(fake.url)))
        certs = create_certs("gpu-advisor", "gpu-advisor", Path(tmp) / "tls")
        group = [Replica(str(config), 1.0, certs) for _ in range(replicas)]
        for replica in group:
            replica.start()
        wait_for(lambda: all(r.ready() for r in group), 60)
        service = Service(group, sticky=not round_robin)
        scheduler = Scheduler(service, fake, [n["metadata"]["name"] for n in nodes])
        window: dict[str, float] = {}
        over = threading.Event()
        if mode == "none":
            over.set()
        else:
            scheduler.hold_at = math.ceil(outage_at * len(pods))
            args = (group, scheduler, len(pods), outage_at, mode, down_s, window, over)
            threading.Thread(target=_outage, args=args, daemon=True).start()
        started = time.monotonic()
        scheduler.run(pods, deadline_s=3600, rate=rate, until=over)
        service.stop()
        for replica in group:
            replica.stop(signal.SIGKILL)
        bound = [(key, node) for key, node in fake.bindings]
        counted = Counted.of(nodes, pods, bound)
        nodes_written = fake.writes["nodes"]  # the claims go to Leases: a binding writes no Node
    back = window.get("back")
    waits = [scheduler.bound_at[k] - back for k in scheduler.waited if back and k in scheduler.bound_at]
    blind = [k for k, at in scheduler.bound_at.items() if window.get("down", 1e18) < at < window.get("up", 0)]
    return {
        "mode": mode,
        "replicas": replicas,
        "pods": len(pods),
        "bound": len(bound),
        "overcommitted_nodes": overcommitted_nodes(counted),
        "bound_while_no_replica_was_up": len(blind),
        "pods_that_waited": len(scheduler.waited),
        "longest_wait_after_back_s": round(max(waits), 2) if waits else None,
        "failed_calls": service.failed_calls,
        "bindings_refused": scheduler.refused,
        "nodes_written": nodes_written,
        "unallocated_percent": round(unallocated_percent(counted), 2),
        "seconds": round(time.monotonic() - started, 1),
        "outage_completed": mode == "none" or "back" in window,
    }


def _outage(
    group: list[Replica],
    scheduler: Scheduler,
    pods: int,
    at: float,
    mode: str,
    down_s: float,
    window: dict[str, float],
    over: threading.Event,
) -> None:
    try:
        _stop_and_start(group, scheduler, pods, at, mode, down_s, window)
    except Exception as exc:  # reported as an outage that did not complete, never raised into the caller
        print(f"outage: {exc}", file=sys.stderr)
    finally:
        scheduler.outage_begun.set()
        over.set()


def _stop_and_start(
    group: list[Replica], scheduler: Scheduler, pods: int, at: float, mode: str, down_s: float, window: dict[str, float]
) -> None:
    wait_for(lambda: len(scheduler.bound_at) >= at * pods, 3600)
    if mode == "roll":
        scheduler.outage_begun.set()
        roll(group, scheduler.service)
        window["back"] = time.monotonic()
        return
    victims = group if mode == "kill-all" else group[:1]
    for replica in victims:
        replica.stop(signal.SIGKILL)
    window["down"] = time.monotonic() if mode == "kill-all" else 1e18
    scheduler.outage_begun.set()
    time.sleep(down_s)
    for replica in victims:
        replica.start()
    window["up"] = time.monotonic()
    wait_for(lambda: all(r.ready() for r in victims), 120)
    window["back"] = time.monotonic()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "sample", type=Path, help="a folder with nodes.json and pods.yaml, or an openb pod list (openb_pod_list_*.csv)"
    )
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--mode", choices=("none", "kill", "kill-all", "roll"), default="kill")
    parser.add_argument("--outage-at", type=float, default=0.4, help="share of the pods bound first")
    parser.add_argument("--down", type=float, default=3.6, help="seconds a killed replica stays down")
    parser.add_argument(
        "--rate", type=float, default=30.0, help="pods created a second (0: one at a time, each once the last is done)"
    )
    parser.add_argument(
        "--round-robin", action="store_true", help="the Service alternates replicas call by call (no session affinity)"
    )
    args = parser.parse_args()
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    for mode in ("none", args.mode):
        found = run(args.sample, args.replicas, mode, args.outage_at, args.down, args.rate, args.round_robin)
        print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
