"""What one share's binding costs the API server and everyone who watches Nodes: bytes each Node watcher
receives, bytes the bind verb writes, the bind verb's wall time, and the API server's CPU, per binding.

The bind verb writes each share's claim under an optimistic lock per node. Where it writes decides the
cost: on the Node itself (before the claims Lease), every binding is a Node update, and every Node
watcher in the cluster (each kube-scheduler, controller-manager, each advisor replica, any operator) is
sent the whole Node again; a Node as a kubelet reports it is tens of kilobytes, most of it its image
list. In a Lease of the advisor's namespace, the Node is not written at all.

Through the HTTP-level fake API server on 127.0.0.1, run in a process of its own so that its CPU is its
own: ``--nodes`` Nodes shaped as a kubelet reports them (50 images with their sizes, addresses, five
conditions, nodeInfo, managedFields: ~20 KB of JSON), a live replica (the real watch, the real app),
and ``--bindings`` shares of 100 milli, each filtered onto its node (the pick is assumed, as
kube-scheduler's filter call does) and bound through ``POST /scheduler/bind``. A raw Node watcher, and
a raw watcher of the claims Leases (which only the advisor's replicas watch), count what they are sent.
Written to run unchanged on the commit before the claims Lease and on this one:

    python -m benchmarks.claims_cost --nodes 10 --bindings 200
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import statistics
import sys
import threading
import time
from typing import Any

_WRITES = ("POST", "PUT", "PATCH")


def kubelet_node(name: str, gpus: int) -> dict[str, Any]:
    """A GPU node in the Alibaba share convention, with what a kubelet reports beside it."""
    from extender.advice.replay.advisor_policy import replay_node_object

    node = replay_node_object(name, "V100", 96_000, 786_432, gpus)
    meta, status = node["metadata"], node["status"]
    meta["labels"] |= {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "p3.16xlarge",
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": "us-east-1a",
        "nvidia.com/gpu.present": "true",
    }
    meta["annotations"] = {
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    meta["managedFields"] = [
        {
            "manager": "kubelet",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-12-02T10:00:00Z",
            "fieldsType": "FieldsV1",
            "subresource": "status",
            "fieldsV1": {
                "f:status": {f"f:{k}": {} for k in ("allocatable", "capacity", "conditions", "images", "nodeInfo")}
            },
        },
    ]
    status["addresses"] = [{"type": "InternalIP", "address": "10.0.3.17"}, {"type": "Hostname", "address": name}]
    status["conditions"] = [
        {
            "type": kind,
            "status": state,
            "lastHeartbeatTime": "2026-12-02T10:00:00Z",
            "lastTransitionTime": "2026-11-30T08:00:00Z",
            "reason": f"Kubelet{kind}",
            "message": f"kubelet reports {kind}",
        }
        for kind, state in (
            ("NetworkUnavailable", "False"),
            ("MemoryPressure", "False"),
            ("DiskPressure", "False"),
            ("PIDPressure", "False"),
            ("Ready", "True"),
        )
    ]
    status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 10250}}
    status["nodeInfo"] = {
        "machineID": "ec2" + "4f" * 15,
        "systemUUID": "ec2a" + "9" * 28,
        "bootID": "1b6e" * 8,
        "kernelVersion": "6.1.112-124.190.amzn2023.x86_64",
        "osImage": "Amazon Linux 2023",
        "containerRuntimeVersion": "containerd://1.7.22",
        "kubeletVersion": "v1.36.2",
        "kubeProxyVersion": "v1.36.2",
        "operatingSystem": "linux",
        "architecture": "amd64",
    }
    status["images"] = [
        {
            "names": [
                f"registry.example.com/ml-platform/team-{i % 7}/image-{i}@sha256:{i:064x}",
                f"mirror.example.com/ml-platform/team-{i % 7}/image-{i}@sha256:{i + 1:064x}",
                f"registry.example.com/ml-platform/team-{i % 7}/image-{i}:v{i}.{i % 10}.0-cuda12.4",
            ],
            "sizeBytes": 50_000_000 + i * 7_919_113,
        }
        for i in range(50)
    ]
    return node


def _serve_fake(conn: Any, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
    """The fake API server's process: answers ``url``, ``cpu`` (its CPU seconds so far) and ``written``."""
    from tests.fakes.apiserver import FakeApiServer

    with FakeApiServer() as fake:
        for obj in nodes:
            fake.put("nodes", obj)
        for obj in pods:
            fake.put("pods", obj)
        conn.send(fake.url)
        while (ask := conn.recv()) != "stop":
            if ask == "cpu":
                conn.send(time.process_time())
            elif ask == "written":
                writes = [(_resource(p), len(b)) for m, p, _, b in list(fake.requests) if m in _WRITES]
                conn.send({"bytes": sum(n for _, n in writes), "writes": [kind for kind, _ in writes]})


def _resource(path: str) -> str:
    if path.endswith("/binding"):
        return "pods/binding"
    return next((kind for kind in ("leases", "nodes") if f"/{kind}" in path), "other")


class Watcher(threading.Thread):
    """One more watcher of ``path``: counts the bytes of the events it is sent (a watch resumed when the
    server ends it; none at all where the server serves no such path)."""

    def __init__(self, port: int, path: str, rv: str) -> None:
        super().__init__(daemon=True)
        self.port, self.path, self.rv, self.received, self.events = port, path, rv, 0, 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            conn.request("GET", f"{self.path}?watch=true&resourceVersion={self.rv}&timeoutSeconds=5")
            resp = conn.getresponse()
            if resp.status != 200:
                return  # before the claims Lease, the fake served no Leases
            for line in resp:
                if line.strip():
                    self.received += len(line)
                    self.events += 1
                    self.rv = json.loads(line)["object"]["metadata"]["resourceVersion"]
            conn.close()


def measure(nodes: int, bindings: int) -> dict[str, Any]:
    from fastapi.testclient import TestClient
    from kubernetes import client

    from extender.advice.replay.advisor_policy import replay_pod_object
    from extender.advice.replay.specs import PodShape
    from extender.cluster.state import ClusterState
    from extender.http.advisor import Advisor
    from extender.http.approvals import Approvals
    from extender.scoring import ScoringPolicy
    from extender.sources.kube_binder import KubeBinder
    from extender.sources.kube_watch import KubeSource
    from gpu_advisor.app import create_app

    node_objs = [kubelet_node(f"gpu-{i:02d}", 8) for i in range(nodes)]
    pods = []
    for i in range(bindings):
        pod = replay_pod_object(PodShape(1000, 2048, 1, 100), f"share-{i:04d}")
        pod["metadata"]["uid"] = f"uid-share-{i:04d}"
        pods.append(pod)
    ours, theirs = multiprocessing.get_context("spawn").Pipe()
    server = multiprocessing.get_context("spawn").Process(target=_serve_fake, args=(theirs, node_objs, pods))
    server.start()
    url = ours.recv()
    cfg = client.Configuration()
    cfg.host = url
    api = client.CoreV1Api(client.ApiClient(cfg))
    source = KubeSource(api, ClusterState("kube"), watch_timeout_s=5, backoff_s=0.05)
    source.start()
    assert source.state.wait_ready(30)
    advisor = Advisor(source.state, None, ScoringPolicy())
    advisor.approvals = Approvals(source.model, KubeBinder(api, source.model))
    rv = str(max(int(n["metadata"]["resourceVersion"]) for n in source.model.nodes.values()))
    port = int(url.rsplit(":", 1)[1])
    watcher = Watcher(port, "/api/v1/nodes", rv)
    lease_watcher = Watcher(port, "/apis/coordination.k8s.io/v1/namespaces/gpu-advisor/leases", rv)
    watcher.start()
    lease_watcher.start()
    walls = []
    with TestClient(create_app(advisor)) as app:
        ours.send("cpu")
        cpu0 = ours.recv()
        for i, pod in enumerate(pods):
            node = node_objs[i % nodes]["metadata"]["name"]
            app.post("/scheduler/filter", json={"Pod": pod, "NodeNames": [node]})
            meta = pod["metadata"]
            body = {"PodName": meta["name"], "PodNamespace": meta["namespace"], "PodUID": meta["uid"], "Node": node}
            start = time.perf_counter()
            reply = app.post("/scheduler/bind", json=body)
            walls.append(time.perf_counter() - start)
            assert reply.json()["Error"] == "", reply.text
        ours.send("cpu")
        cpu1 = ours.recv()
    time.sleep(1.0)  # the last events reach the watcher
    ours.send("written")
    written = ours.recv()
    source.stop()
    watcher.stopped.set()
    lease_watcher.stopped.set()
    ours.send("stop")
    server.join(10)
    kinds: dict[str, int] = {}
    for kind in written["writes"]:
        kinds[kind] = kinds.get(kind, 0) + 1
    walls.sort()
    return {
        "bindings": bindings,
        "nodes": nodes,
        "node_bytes": len(json.dumps(node_objs[0])),
        "node_watch_events": watcher.events,
        "node_watch_bytes_per_binding": round(watcher.received / bindings),
        # the advisor's replicas only: nothing else watches the claims Leases
        "lease_watch_bytes_per_binding": round(lease_watcher.received / bindings),
        "bytes_written_per_binding": round(written["bytes"] / bindings),
        "writes_by_resource": kinds,
        "bind_wall_ms_median": round(1000 * statistics.median(walls), 2),
        "bind_wall_ms_p90": round(1000 * walls[int(0.9 * (len(walls) - 1))], 2),
        "apiserver_cpu_ms_per_binding": round(1000 * (cpu1 - cpu0) / bindings, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--bindings", type=int, default=200)
    args = parser.parse_args()
    print(json.dumps(measure(args.nodes, args.bindings)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
