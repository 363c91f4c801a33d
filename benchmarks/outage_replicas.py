"""The advisor replicas of the outage check (``benchmarks.outage_check``): real ``gpu-advisor serve
--cluster kube`` processes, each answering kube-scheduler's verbs on its extender port (HTTPS, to the client
certificate ``certs create`` writes, as the manifests set it up), and the Service in front of them (those up
and ready, as kube-proxy routes to ready endpoints: one client kept on one replica while it is ready, as
the manifests' ``sessionAffinity: ClientIP`` does; or round robin, call by call)."""

from __future__ import annotations

import http.client
import json
import signal
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from benchmarks.hostile import free_port, get
from webhook.certs import CertFiles

__all__ = ["Replica", "Service", "kubeconfig", "roll", "wait_for"]


@dataclass
class Replica:
    kubeconfig: str
    drain_s: float
    certs: CertFiles
    port: int = field(default_factory=free_port)
    extender: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv = [sys.executable, "-m", "gpu_advisor.cli", "--log-level", "warning", "serve", "--cluster", "kube"]
        argv += ["--kubeconfig", self.kubeconfig, "--port", str(self.port), "--drain-seconds", str(self.drain_s)]
        argv += ["--tls-cert", str(self.certs.cert), "--tls-key", str(self.certs.key), "--tls-port", str(free_port())]
        argv += ["--scheduler-client-ca", str(self.certs.ca_cert), "--scheduler-port", str(self.extender)]
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
    """The replicas that are up and ready, as a Service's endpoints are: with ``sticky``, one kept while it is
    ready (sessionAffinity: ClientIP, one kube-scheduler); otherwise round robin, call by call."""

    def __init__(self, replicas: list[Replica], sticky: bool = True) -> None:
        self.replicas = replicas
        self.endpoints: list[Replica] = list(replicas)
        self.sticky = sticky
        self.current: Replica | None = None
        self.turn = 0
        certs = replicas[0].certs
        # kube-scheduler's side of the printed tlsConfig: its client pair, the advisor checked against ca.crt.
        self.context = ssl.create_default_context(cafile=str(certs.ca_cert))
        self.context.check_hostname = False  # called by address here; the chain is still verified
        self.context.load_cert_chain(certs.client_cert, certs.client_key)
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
            if self.sticky and any(r is self.current for r in self.endpoints):
                replica = self.current
            else:
                replica = self.endpoints[self.turn % len(self.endpoints)]
                self.turn += 1
            self.current = replica
        assert replica is not None
        try:
            status, reply = _post(replica.extender, f"/scheduler/{verb}", body, self.context)
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
        new = Replica(old.kubeconfig, old.drain_s, old.certs)
        new.start()
        group.append(new)
        wait_for(new.ready, 120)
        wait_for(lambda new=new: any(r is new for r in service.endpoints), 30)
        old.stop(signal.SIGTERM)
        group.remove(old)


def _post(port: int, path: str, body: dict[str, Any], context: ssl.SSLContext) -> tuple[int, bytes]:
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=context)
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
