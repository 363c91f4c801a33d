"""Model fit on AMD Instinct memory: the node labeller's amd.com/gpu.vram is one GPU's VRAM."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.model.amd_labels import vram_mib
from gpu_advisor.cli import main

# One 8-GPU XGMI board labelled as each product; an HGX H100 beside them.
CLUSTER = {
    "nodes": [
        {"name": "mi300x-a", "machine": "mi300x", "labels": {"amd.com/gpu.vram": "191G"}},
        {"name": "mi325x-a", "machine": "mi300x", "labels": {"amd.com/gpu.vram": "255G"}},
        {
            "name": "h100-a",
            "machine": "hgx-h100",
            "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81559"},
        },
    ]
}


def serving(model: str, resource: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "serve", "namespace": "ml"},
        "spec": {
            "containers": [
                {
                    "name": "vllm",
                    "image": "rocm/vllm",
                    "args": ["--model", model],
                    "resources": {"limits": {resource: "1"}},
                }
            ]
        },
    }


@pytest.mark.parametrize(
    ("labels", "mib"),
    [
        ({"amd.com/gpu.vram": "191G"}, 191 * 1024),  # MI300X: 196592 MiB, rounded down to whole GiB
        ({"amd.com/gpu.vram": "255G"}, 255 * 1024),
        ({"beta.amd.com/gpu.vram.16G": "1"}, 16 * 1024),  # the older labeller's form
        ({"amd.com/gpu.vram": "lots"}, None),
        ({}, None),
    ],
)
def test_the_vram_label_is_whole_gib(labels: dict[str, str], mib: int | None) -> None:
    assert vram_mib(labels) == mib


@pytest.mark.parametrize(
    ("model", "fits"),
    [
        # 70 B × 2 bytes (bf16) = 140 GB of weights: one 191 GiB MI300X holds them, one 80 GB H100 does not.
        ("meta-llama/Llama-3.1-70B-Instruct", {"mi300x-a", "mi325x-a"}),
        # 120 B × 2 bytes = 240 GB = 223.5 GiB: more than an MI300X's 191 GiB, less than an MI325X's 255 GiB.
        ("acme/Dense-120B-Instruct", {"mi325x-a"}),
    ],
)
def test_a_model_is_placed_only_where_its_weights_fit_one_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str, fits: set[str]
) -> None:
    cluster, manifest = tmp_path / "cluster.yaml", tmp_path / "pod.yaml"
    cluster.write_text(yaml.safe_dump(CLUSTER))
    manifest.write_text(yaml.safe_dump(serving(model, "amd.com/gpu")))
    assert main(["explain", str(manifest), "--cluster", str(cluster), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert {row["node"] for row in answer["ranked"]} == fits
    refused = {row["node"]: row["reason"] for row in answer["filtered"]}
    assert refused["h100-a"] == "offers nvidia.com/gpu, pod asks for amd.com/gpu"
