"""A real Prometheus server (the ``prometheus`` binary, e.g. Debian's package) on 127.0.0.1, with a
config and data directory in a temporary folder, scraping the jobs a test gives it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

SCRAPE_INTERVAL_S = 1


def prometheus_binary() -> str | None:
    return shutil.which("prometheus") or next((p for p in ("/usr/bin/prometheus",) if os.access(p, os.X_OK)), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def job(
    name: str, target: str, honor_labels: bool = False, set_labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A scrape job of one target; ``set_labels`` become target labels through relabel_configs, as a
    ServiceMonitor's or the GPU Operator's relabelings make them (``instance`` included)."""
    relabel = [{"target_label": k, "replacement": v} for k, v in (set_labels or {}).items()]
    return {
        "job_name": name,
        "honor_labels": honor_labels,
        "static_configs": [{"targets": [target]}],
        "relabel_configs": relabel,
    }


class PrometheusServer:
    def __init__(
        self,
        binary: str,
        workdir: Path,
        jobs: Sequence[Mapping[str, Any]],
        retention: str = "1h",
        flags: Sequence[str] = (),
    ) -> None:
        self.port = _free_port()
        config = {
            "global": {"scrape_interval": f"{SCRAPE_INTERVAL_S}s", "evaluation_interval": f"{SCRAPE_INTERVAL_S}s"},
            "scrape_configs": list(jobs),
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.log = (workdir / "prometheus.log").open("w")
        self._process = subprocess.Popen(
            [
                binary,
                f"--config.file={workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                f"--storage.tsdb.retention.time={retention}",  # backfilled history needs days
                *flags,
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def cpu_seconds(self) -> float:
        """User + system CPU time the server has used so far (Linux /proc)."""
        fields = Path(f"/proc/{self._process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def query(self, promql: str) -> list[dict[str, Any]]:
        params = urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{params}", timeout=5) as resp:
            return list(json.load(resp)["data"]["result"])

    def wait_until(self, promql: str, timeout_s: float = 20.0) -> float:
        """Wait until ``promql`` returns a series; returns the seconds waited."""
        start = time.monotonic()
        while time.monotonic() - start < timeout_s:
            if self._process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self._process.returncode}; see {self.log.name}")
            try:
                if self.query(promql):
                    return time.monotonic() - start
            except OSError:
                pass  # not listening yet
            time.sleep(0.1)
        raise TimeoutError(f"prometheus: {promql!r} still empty after {timeout_s} s")

    def stop(self) -> None:
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self.log.close()
