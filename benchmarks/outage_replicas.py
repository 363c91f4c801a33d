"""The advisor replicas of the outage check (``benchmarks.outage_check``): real ``gpu-advisor serve
--cluster kube`` processes, and the Service in front of them (round robin over those up and ready, as
kube-proxy routes to ready endpoints)."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from benchmarks.hostile import free_port, get

__all__ = ["Replica", "Service", "kubeconfig", "roll", "wait_for"]


@dataclass
class Replica:
    kubeconfig: str
    drain_s: float
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv = [sys.executable, "-m", "gpu_advisor.cli", "--log-level", "warning", "serve", "--cluster", "kube"]
        argv += ["--kubeconfig", self.kubeconfig, "--port", str(self.port), "--drain-seconds", str(self.drain_s)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def ready(self) -> bool:
        try:
            return self.proc is not None and self.proc.poll() is None and get(self.port, "/readyz", 2)[0] == 200
        except OSError:
            return False

    def stop(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)


class Service:
    """Round robin over the replicas that are up and ready, as a Service's endpoints are."""

    def __init__(self, replicas: list[Replica]) -> None:
        self.replicas = replicas
        self.endpoints: list[Replica] = list(replicas)
        self.turn = 0
        self.failed_calls = 0
        self.lock = threading.Lock()
        self._stop = threading.Event()
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        while not self._stop.wait(0.2):
            ready = [r for r in list(self.replicas) if r.ready()]  # a rolling upgrade adds and removes
            with self.lock:
                self.endpoints = ready

    def stop(self) -> None:
        self._stop.set()

    def call(self, verb: str, body: dict[str, Any]) -> Any:
        """The reply's JSON; None when no replica answered (kube-scheduler's call failed)."""
        with self.lock:
            if not self.endpoints:
                self.failed_calls += 1
                return None
            replica = self.endpoints[self.turn % len(self.endpoints)]
            self.turn += 1
        try:
            status, reply = _post(replica.port, f"/scheduler/{verb}", body)
        except OSError:
            status, reply = 0, b""
        if status != 200:
            with self.lock:
                self.failed_calls += 1
            return None
        return json.loads(reply)


def roll(group: list[Replica], service: Service) -> None:
    """A rolling upgrade as the manifests' Deployment does it (maxSurge 1, maxUnavailable 0,
    minReadySeconds): each old replica is drained only once a new one is ready and among the Service's
    endpoints."""
    for old in list(group):
        new = Replica(old.kubeconfig, old.drain_s)
        new.start()
        group.append(new)
        wait_for(new.ready, 120)
        wait_for(lambda new=new: any(r is new for r in service.endpoints), 30)
        old.stop(signal.SIGTERM)
        group.remove(old)


def _post(port: int, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("POST", path, json.dumps(body, separators=(",", ":")), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def wait_for(check: Any, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.05)
    raise RuntimeError("timed out")


def kubeconfig(url: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": url}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}],
    }
