"""CPU and memory of `gpu-advisor agent` at steady state.

    python benchmarks/agent.py [--seconds 30]

The agent runs as its own process, exactly as in the DaemonSet but for its outermost boundaries: NVML is
the test suite's recorded 8×H100 NVSwitch machine (installed as the `pynvml` module), the kubelet is a
real gRPC PodResources server on a unix socket, the API server an HTTP fake on 127.0.0.1 (reached through
a kubeconfig with a token, by the agent's own merge-patch client). A pod starts or ends every 5 s.
Goals: < 1 % of a core, ≤ 60 MiB RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent import futures
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # keep this folder's scripts from shadowing the packages they measure
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import grpc

from extender.agent.podresources import api_pb2_grpc
from tests.fakes.apiserver import FakeApiServer, node
from tests.kube.test_agent import UUIDS, FakeKubelet

AGENT = """
import sys
sys.path.insert(0, {repo!r})
from tests.fakes import machines
from tests.fakes.nvml import fake_pynvml
sys.modules["pynvml"] = fake_pynvml(machines.hgx_h100())
from gpu_advisor.cli import main
sys.exit(main(["agent", "--node", "gpu-1", "--socket", {socket!r}, "--kubeconfig", {kubeconfig!r},
               "--host", "127.0.0.1", "--port", "0", "--poll", "2", "--min-interval", "10"]))
"""


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    """Resident memory now (VmRSS) or at its peak (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    repo = str(Path(__file__).resolve().parents[1])
    with tempfile.TemporaryDirectory() as tmp, FakeApiServer() as api:
        api.put("nodes", node("gpu-1"))
        kubelet = FakeKubelet(UUIDS)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        api_pb2_grpc.add_PodResourcesListerServicer_to_server(kubelet, server)
        socket = f"{tmp}/kubelet.sock"
        server.add_insecure_port(f"unix://{socket}")
        server.start()
        kubeconfig = Path(tmp, "kubeconfig")
        kubeconfig.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "b",
                    "clusters": [{"name": "b", "cluster": {"server": api.url}}],
                    "users": [{"name": "u", "user": {"token": "t"}}],
                    "contexts": [{"name": "b", "context": {"cluster": "b", "user": "u"}}],
                }
            )
        )
        code = AGENT.format(repo=repo, socket=socket, kubeconfig=str(kubeconfig))
        env = {**os.environ, "MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", "2")}  # as the DaemonSet sets it
        proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.DEVNULL, env=env)
        try:
            time.sleep(5)  # start-up: imports, NVML discovery, first write
            start_cpu, start = cpu_seconds(proc.pid), time.time()
            tick = 0
            while time.time() - start < args.seconds:
                time.sleep(5)
                tick += 1
                if tick % 2:
                    kubelet.pods[("ml", "job")] = UUIDS[:2]
                else:
                    kubelet.pods.pop(("ml", "job"), None)
            elapsed = time.time() - start
            used = cpu_seconds(proc.pid) - start_cpu
            rss, peak = rss_mib(proc.pid), rss_mib(proc.pid, "VmHWM")
            writes = sum(1 for r in api.requests if r[0] == "PATCH")
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            server.stop(None)
    print(f"agent steady state over {elapsed:.0f} s (a pod starting or ending every 5 s, poll 2 s):")
    print(f"  CPU  {used:.2f} s = {100 * used / elapsed:.2f} % of one core   (goal < 1 %)")
    print(f"  RSS  {rss:.1f} MiB, peak {peak:.1f} MiB       (goal ≤ 60 MiB)")
    print(f"  Node writes: {writes}")


if __name__ == "__main__":
    main()
