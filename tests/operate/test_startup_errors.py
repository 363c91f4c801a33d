"""Start-up mistakes end in one line on stderr and a non-zero exit, never a page of traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from webhook.certs import create_certs


def gpu_advisor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpu_advisor.cli", *args], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.create_server(("127.0.0.1", 0)) as held:
        yield held.getsockname()[1]


def test_a_taken_port_is_one_line_and_exit_2(taken_port: int) -> None:
    done = gpu_advisor("serve", "--port", str(taken_port))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"gpu-advisor: error: cannot listen on 127.0.0.1:{taken_port}: Address already in use"
    ]


def test_a_taken_webhook_port_is_refused_before_anything_is_served(tmp_path: Path, taken_port: int) -> None:
    files = create_certs("svc", "ns", tmp_path)
    with socket.create_server(("127.0.0.1", 0)) as free:
        plain = free.getsockname()[1]
    done = gpu_advisor(
        "serve",
        "--port",
        str(plain),
        "--tls-port",
        str(taken_port),
        "--tls-cert",
        str(files.cert),
        "--tls-key",
        str(files.key),
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"gpu-advisor: error: cannot listen on 127.0.0.1:{taken_port}: Address already in use"
    ]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("clusters: [\n", "cannot reach the cluster: while parsing a flow node"),
        ("apiVersion: v1\nkind: Config\n", "cannot reach the cluster: Invalid kube-config file"),
    ],
    ids=["not YAML", "no cluster in it"],
)
def test_a_bad_kubeconfig_is_one_line_and_exit_2(tmp_path: Path, content: str, says: str) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(content)
    done = gpu_advisor("serve", "--cluster", "kube", "--kubeconfig", str(kubeconfig))
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"gpu-advisor: error: {says}")


def test_a_missing_kubeconfig_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = gpu_advisor("serve", "--cluster", "kube", "--kubeconfig", str(tmp_path / "absent"))
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("gpu-advisor: error: cannot reach the cluster:")
