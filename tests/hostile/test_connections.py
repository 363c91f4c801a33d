"""A real ``gpu-advisor serve`` on 127.0.0.1: sockets that send nothing, half a request or half a body
are closed; a client that hangs up leaves no traceback; names from clients are logged escaped; at
the file-descriptor limit the log is not flooded; and /healthz answers within milliseconds while the
worst dry-runs run, the memory of the server and its sandbox staying under the Deployment's limit."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.hostile import MIB, attack, percentile, served

TIMEOUTS = ("--header-timeout", "1", "--body-timeout", "2")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, subprocess.Popen[bytes], Path]]:
    with served(*TIMEOUTS, log=tmp_path_factory.mktemp("serve") / "serve.log") as running:
        yield running


def closed_within(sock: socket.socket, seconds: float) -> tuple[bool, bytes]:
    """(closed by the server within ``seconds``, what it sent before closing)."""
    sock.settimeout(seconds)
    got = b""
    try:
        while chunk := sock.recv(4096):
            got += chunk
    except TimeoutError:
        return False, got
    except ConnectionResetError:
        pass
    return True, got


@pytest.mark.parametrize(
    ("sent", "within"),
    [
        (b"", 3.0),
        (b"POST /v1/dry-run HTTP/1.1\r\nHost: x\r\n", 3.0),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /heal", 5.0),  # answered, then half a second request
    ],
    ids=["idle", "half-sent-headers", "half-sent-second-request"],
)
def test_a_socket_that_does_not_send_its_headers_is_closed(
    server: tuple[int, subprocess.Popen[bytes], Path], sent: bytes, within: float
) -> None:
    with socket.create_connection(("127.0.0.1", server[0])) as sock:
        sock.sendall(sent)
        closed, _ = closed_within(sock, within)
        assert closed


def test_a_half_sent_body_gets_a_408_and_the_socket_is_closed(
    server: tuple[int, subprocess.Popen[bytes], Path],
) -> None:
    with socket.create_connection(("127.0.0.1", server[0])) as sock:
        sock.sendall(b"POST /v1/dry-run HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nkind: Pod\n")
        closed, reply = closed_within(sock, 5.0)
        assert closed and reply.startswith(b"HTTP/1.1 408 ")
        assert b"the body did not arrive within 2 s" in reply


def test_a_client_that_hangs_up_mid_body_leaves_no_traceback(server: tuple[int, subprocess.Popen[bytes], Path]) -> None:
    port, _, log = server
    for path in ("/v1/dry-run", "/scheduler/filter"):
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{{".encode())
    time.sleep(0.5)
    assert "Traceback" not in log.read_text()


def test_names_sent_by_clients_are_logged_escaped(server: tuple[int, subprocess.Popen[bytes], Path]) -> None:
    port, _, log = server
    name = "evil\nERROR forged line \x1b[31m"
    pod = {
        "metadata": {"name": name, "namespace": "ml", "annotations": {"gpu-advisor.io/interconnect": "warp"}},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
    }
    body = json.dumps({"Pod": pod, "NodeNames": ["l40s-a"]}).encode()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /scheduler/filter HTTP/1.1\r\nHost: x\r\nConnection: close\r\n")
        sock.sendall(f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        assert closed_within(sock, 10)[1].startswith(b"HTTP/1.1 200 ")
    text = log.read_text()
    assert "evil\\nERROR forged line \\x1b[31m" in text
    assert "\nERROR forged" not in text and "\x1b" not in text


def test_at_the_file_descriptor_limit_the_log_is_not_flooded(tmp_path: Path) -> None:
    def few_fds() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    log = tmp_path / "serve.log"
    port = _free_port()
    with open(log, "wb") as out:
        argv = [sys.executable, "-m", "gpu_advisor.cli", "serve", "--port", str(port), *TIMEOUTS]
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, preexec_fn=few_fds)
    sockets: list[socket.socket] = []
    try:
        _wait_for(port)
        for _ in range(150):
            try:
                sockets.append(socket.create_connection(("127.0.0.1", port), timeout=1))
            except OSError:
                break
        # Every descriptor the server may have is in use (accept() fails) until the idle ones time out.
        open_fds = 0
        for _ in range(30):
            open_fds = max(open_fds, len(os.listdir(f"/proc/{proc.pid}/fd")))
            time.sleep(0.1)
    finally:
        for s in sockets:
            s.close()
        proc.terminate()
        proc.wait(10)
    lines = log.read_text().splitlines()
    errors = [line for line in lines if line.startswith("ERROR ")]
    assert open_fds >= 62, f"the limit was not reached: {open_fds} descriptors open"
    # uvloop backs off quietly; asyncio's loop logs each failed accept(): five records per cause and
    # minute (each with its traceback) get through, where stock asyncio wrote 185,000 lines.
    assert len(errors) <= 15 and len(lines) < 300, f"{len(errors)} error records, {len(lines)} lines"


def test_healthz_answers_within_milliseconds_while_the_worst_dry_runs_run(
    server: tuple[int, subprocess.Popen[bytes], Path],
) -> None:
    port, proc, log = server
    figures = attack(port, proc.pid, seconds=8, attackers=2)
    latencies = figures["latencies"]
    assert isinstance(latencies, list) and len(latencies) > 50
    assert percentile(latencies, 0.99) < 0.100, f"/healthz p99 {percentile(latencies, 0.99) * 1000:.0f} ms"
    assert int(str(figures["peak_rss"])) < 512 * MIB
    statuses = figures["statuses"]
    assert isinstance(statuses, dict)
    assert all(code < 500 for counts in statuses.values() for code in counts), statuses
    assert "Traceback" not in log.read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server did not start")
