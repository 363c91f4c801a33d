"""A throwaway etcd + kube-apiserver for ``benchmarks/real_pace.py``, started from the binaries in a
folder, on 127.0.0.1 only, with its own certificates (one CA signs the serving certificate and the
admin client certificate) in a temporary folder that is removed afterwards.

The API server runs with what a cluster without kubelet or controller-manager needs: the admission
plugins ``TaintNodesByCondition`` (no controller would clear the not-ready taint on new Nodes) and
``ServiceAccount`` (no controller makes a namespace's ``default`` ServiceAccount) are off.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

BINARIES = ("etcd", "kube-apiserver", "kube-scheduler")


class MissingBinaries(SystemExit):
    """The harness cannot run without the real binaries: it says so and stops, never skips."""


def check_binaries(folder: Path, names: tuple[str, ...]) -> None:
    missing = [name for name in names if not os.access(folder / name, os.X_OK)]
    if missing:
        raise MissingBinaries(
            f"{folder} lacks the executable(s) {', '.join(missing)}: build Kubernetes v1.36's "
            "cmd/kube-apiserver and cmd/kube-scheduler and etcd v3.6 from source (see this script's docstring)"
        )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _write_key(path: Path) -> rsa.RSAPrivateKey:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return key


def _sign(
    path: Path, subject: x509.Name, key: rsa.RSAPrivateKey, issuer: tuple[x509.Name, rsa.RSAPrivateKey] | None
) -> None:
    """A certificate for ``key``: self-signed as a CA when ``issuer`` is None, else a leaf for both
    serving 127.0.0.1 and client use (one certificate kind keeps the throwaway PKI short)."""
    now = datetime.datetime.now(datetime.UTC)
    issuer_name, issuer_key = issuer if issuer else (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if issuer is not None:
        usages = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
        names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    path.write_bytes(builder.sign(issuer_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))


def _name(common: str, org: str | None = None) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org)] if org else []
    return x509.Name([*parts, x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_pki(folder: Path) -> None:
    """ca.crt/key, apiserver.crt/key (serving), admin.crt/key (system:masters), sa.key/sa.pub."""
    ca_key = _write_key(folder / "ca.key")
    _sign(folder / "ca.crt", _name("real-pace-ca"), ca_key, None)
    for stem, subject in (("apiserver", _name("kube-apiserver")), ("admin", _name("admin", "system:masters"))):
        _sign(folder / f"{stem}.crt", subject, _write_key(folder / f"{stem}.key"), (_name("real-pace-ca"), ca_key))
    sa_key = _write_key(folder / "sa.key")
    public = sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    (folder / "sa.pub").write_bytes(public)


def write_kubeconfig(path: Path, server: str, pki: Path) -> None:
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: real-pace\n  cluster:\n    server: {server}\n"
        f"    certificate-authority: {pki / 'ca.crt'}\n"
        f"users:\n- name: admin\n  user:\n    client-certificate: {pki / 'admin.crt'}\n"
        f"    client-key: {pki / 'admin.key'}\n"
        "contexts:\n- name: real-pace\n  context: {cluster: real-pace, user: admin}\ncurrent-context: real-pace\n"
    )


def _etcd_argv(binary: Path, data: Path, client: str, peer: str) -> list[str]:
    """Upstream etcd wants advertised URLs beside explicit listen URLs; a minimal main around etcd's
    embed package may not take those flags, so they are passed only when its help names them."""
    argv = [str(binary), "--name", "real-pace", "--data-dir", str(data)]
    argv += ["--listen-client-urls", client, "--listen-peer-urls", peer, "--log-level", "warn"]
    shown = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=30)
    flags = shown.stdout + shown.stderr
    if "advertise-client-urls" in flags:
        argv += ["--advertise-client-urls", client, "--initial-advertise-peer-urls", peer]
    if "initial-cluster" in flags.replace("initial-cluster-", ""):  # a main may build it from --name
        argv += ["--initial-cluster", f"real-pace={peer}"]
    return argv


def _apiserver_argv(binary: Path, pki: Path, port: int, etcd: str) -> list[str]:
    flags = {
        "etcd-servers": etcd,
        "bind-address": "127.0.0.1",
        "advertise-address": "127.0.0.1",
        "secure-port": str(port),
        "tls-cert-file": pki / "apiserver.crt",
        "tls-private-key-file": pki / "apiserver.key",
        "client-ca-file": pki / "ca.crt",
        "service-account-issuer": "https://kubernetes.default.svc.cluster.local",
        "service-account-key-file": pki / "sa.pub",
        "service-account-signing-key-file": pki / "sa.key",
        "service-cluster-ip-range": "10.96.0.0/16",
        "authorization-mode": "Node,RBAC",
        "disable-admission-plugins": "TaintNodesByCondition,ServiceAccount",
        "requestheader-client-ca-file": pki / "ca.crt",
        "requestheader-allowed-names": "front-proxy-client",
        "requestheader-username-headers": "X-Remote-User",
        "requestheader-group-headers": "X-Remote-Group",
        "requestheader-extra-headers-prefix": "X-Remote-Extra-",
        "endpoint-reconciler-type": "none",
        "cert-dir": pki / "apiserver-certs",
    }
    return [str(binary), *(f"--{name}={value}" for name, value in flags.items())]


def _wait(url: str, context: ssl.SSLContext | None, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{log.stem} exited ({process.returncode}); its log: {log}")
        try:
            with urllib.request.urlopen(url, context=context, timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"{url} not ready after 180 s; see {log}")


@dataclass
class ControlPlane:
    """etcd and kube-apiserver started here; ``kubeconfig`` reaches the API server as admin."""

    folder: Path
    kubeconfig: Path
    pids: dict[str, int]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def stop(self) -> None:
        for process in reversed(self.processes):
            stop_process(process)


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, and SIGKILL if it has not ended within 30 s."""
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _spawn(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as sink:
        return subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def start(binaries: Path, folder: Path) -> ControlPlane:
    """etcd, then kube-apiserver once etcd answers /health; returns once /readyz says 200."""
    pki = folder / "pki"
    pki.mkdir(parents=True)
    make_pki(pki)
    client_url, peer_url = (f"http://127.0.0.1:{free_port()}" for _ in range(2))
    port = free_port()
    etcd_log, api_log = folder / "etcd.log", folder / "kube-apiserver.log"
    etcd = _spawn(_etcd_argv(binaries / "etcd", folder / "etcd-data", client_url, peer_url), etcd_log)
    plane = ControlPlane(folder, folder / "admin.kubeconfig", {"etcd": etcd.pid}, [etcd])
    try:
        _wait(f"{client_url}/health", None, etcd, etcd_log)
        apiserver = _spawn(_apiserver_argv(binaries / "kube-apiserver", pki, port, client_url), api_log)
        plane.processes.append(apiserver)
        plane.pids["kube-apiserver"] = apiserver.pid
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        _wait(f"https://127.0.0.1:{port}/readyz", context, apiserver, api_log)
    except BaseException:
        plane.stop()
        raise
    write_kubeconfig(plane.kubeconfig, f"https://127.0.0.1:{port}", pki)
    return plane


def pids_by_name(names: tuple[str, ...]) -> dict[str, int]:
    """For an API server started elsewhere on this machine: the one process of each name (its
    /proc/PID/comm); a name with no process, or with several, is left out and its CPU not read."""
    found: dict[str, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                comm = (entry / "comm").read_text().strip()
            except OSError:
                continue
            if comm in names:
                found.setdefault(comm, []).append(int(entry.name))
    return {name: pids[0] for name, pids in found.items() if len(pids) == 1}
