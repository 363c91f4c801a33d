"""What a new user meets first: ``serve`` says in one line every address it listens on, pages answer HEAD
as GET (no body), and a command that reads the live cluster by default says, without a kubeconfig, what
it reads and how to choose another."""

from __future__ import annotations

import http.client
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from benchmarks.hostile import free_port, served
from gpu_advisor.cli import main
from gpu_advisor.listeners import listening_line
from webhook.certs import create_certs


def test_the_listening_line_names_each_address_and_what_it_serves() -> None:
    assert listening_line([("127.0.0.1", 8080)]) == (
        "gpu-advisor listening on http://127.0.0.1:8080 (extender, /v1, console, health, metrics)"
    )
    assert listening_line([("0.0.0.0", 8080), ("0.0.0.0", 8443)]) == (
        "gpu-advisor listening on http://0.0.0.0:8080 (all addresses) (extender, /v1, console, health, metrics)"
        " and https://0.0.0.0:8443 (all addresses) (admission webhooks, health)"
    )
    assert listening_line([("::1", 8080, 0, 0)]).startswith("gpu-advisor listening on http://[::1]:8080 ")


def test_serve_logs_one_line_with_both_of_its_addresses(tmp_path: Path) -> None:
    certs = create_certs("gpu-advisor", "gpu-advisor", tmp_path / "certs")
    tls_port = free_port()
    tls = ("--tls-cert", str(certs.cert), "--tls-key", str(certs.key), "--tls-port", str(tls_port))
    with served(*tls, log=tmp_path / "serve.log") as (port, _, log):
        lines = [line for line in log.read_text().splitlines() if "listening on" in line]
    assert lines == [
        f"INFO:     gpu-advisor listening on http://127.0.0.1:{port} (extender, /v1, console, health, metrics)"
        f" and https://127.0.0.1:{tls_port} (admission webhooks, health)"
    ]


def test_a_page_answers_head_as_get_without_the_body(tmp_path: Path) -> None:
    with served(log=tmp_path / "serve.log") as (port, _, _):
        for path in ("/", "/healthz", "/metrics", "/v1/console/cluster"):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            try:
                conn.request("GET", path)
                got = conn.getresponse()
                body = got.read()
                conn.request("HEAD", path)
                head = conn.getresponse()
                assert (head.status, head.read()) == (200, b""), path
                assert head.getheader("content-type") == got.getheader("content-type"), path
                if path in ("/", "/healthz"):  # the same answer twice (/metrics counts the GET)
                    assert head.getheader("content-length") == str(len(body)), path
            finally:
                conn.close()


def test_head_in_process_is_get_without_a_body_and_post_only_routes_still_refuse_it(api: TestClient) -> None:
    page = api.get("/")
    head = api.head("/")
    assert head.status_code == 200 and head.content == b"" and head.headers["content-length"] == str(len(page.content))
    assert api.head("/scheduler/filter").status_code == api.get("/scheduler/filter").status_code == 405


@pytest.mark.parametrize("command", [["diagnose", "p"], ["snapshot"], ["rightsize"], ["usage", "--prometheus", "x"]])
def test_a_command_that_reads_the_live_cluster_says_how_to_choose_without_a_kubeconfig(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    code = main(command)
    err = capsys.readouterr().err
    if command[0] == "usage":  # usage reads Prometheus, not the cluster: its own one line
        assert code == 2 and "Traceback" not in err
        return
    assert code == 2 and err.count("\n") == 1, err
    assert re.search(r"cannot read a kubeconfig \(.+\); --cluster kube reads the live cluster", err), err
    assert "--cluster simulated reads the built-in one" in err


def test_explain_reads_the_simulated_cluster_by_default_as_serve_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "examples/finetune.yaml"]) == 0
    assert "best: dgx1-v100-a" in capsys.readouterr().out
