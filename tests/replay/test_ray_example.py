"""The KubeRay example stays runnable: its command is one `gpu-advisor replay` accepts, on a Ray of the
version its image holds, which the `ray` extra admits."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from gpu_advisor.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
RAYJOB = REPO / "examples" / "replay-rayjob.yaml"
IMAGE = REPO / "examples" / "replay-ray.Dockerfile"


def test_the_rayjobs_command_is_a_replay_on_the_cluster_of_the_job() -> None:
    job = yaml.safe_load(RAYJOB.read_text())
    assert (job["apiVersion"], job["kind"]) == ("ray.io/v1", "RayJob")
    argv = shlex.split(job["spec"]["entrypoint"])
    assert argv[:2] == ["gpu-advisor", "replay"]
    args = build_parser().parse_args(argv[1:])
    assert args.ray == "auto" and args.jobs is None and args.compare_published
    mounted = {
        mount["mountPath"]
        for container in job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"]
        for mount in container["volumeMounts"]
    }
    for path in (Path(args.nodes), *args.pods, args.json):
        assert any(str(path).startswith(folder + "/") for folder in mounted), f"{path} is on no mounted volume"


def test_the_image_the_cluster_and_the_extra_agree_on_rays_version() -> None:
    job = yaml.safe_load(RAYJOB.read_text())
    version = job["spec"]["rayClusterSpec"]["rayVersion"]
    base = re.search(r"^FROM rayproject/ray:(\S+?)-py311$", IMAGE.read_text(), re.MULTILINE)
    assert base is not None and base.group(1) == version
    floor = re.search(r'^ray = \["ray>=([0-9.]+)"\]$', (REPO / "pyproject.toml").read_text(), re.MULTILINE)
    assert floor is not None
    assert tuple(map(int, floor.group(1).split("."))) <= tuple(map(int, version.split(".")))
    images = {
        container["image"]
        for group in [
            job["spec"]["rayClusterSpec"]["headGroupSpec"],
            *job["spec"]["rayClusterSpec"]["workerGroupSpecs"],
        ]
        for container in group["template"]["spec"]["containers"]
    }
    assert len(images) == 1  # the same Ray and gpu-advisor on the head and every worker
