"""Diagnose on a mixed cluster: an idle NVIDIA node is no room for a pending amd.com/gpu pod."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpu_advisor.cli import main

CLUSTER = {
    "nodes": [
        {"name": "mi300x-a", "machine": "mi300x", "free": [6, 7]},
        {"name": "h100-a", "machine": "hgx-h100"},
    ],
    "pods": [
        {"name": "big", "namespace": "ml", "node": "mi300x-a", "gpus": 6, "resource": "amd.com/gpu"},
        {"name": "waiting", "namespace": "ml", "gpus": 4, "resource": "amd.com/gpu"},
    ],
}


def test_a_pending_amd_pod_is_blocked_by_allocation_not_by_the_idle_h100(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(yaml.safe_dump(CLUSTER))
    main(["diagnose", "waiting", "-n", "ml", "--cluster", str(snapshot)])
    out = capsys.readouterr().out
    # 8 MI300X GPUs − 6 held by "big" = 2 free, fewer than 4; the H100's 8 free GPUs are not counted.
    assert "explained by: allocation — no node has 4 GPUs free" in out
    assert "mi300x-a: 2/8 free" in out and "h100-a" not in out
