"""The README's cluster quick start, rendered as written: its `helm install` line, through Helm's own
library, gives objects that pass Kubernetes' schemas (no cluster needed)."""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.operate.chart import CHART, render, validate

README = Path(__file__).resolve().parents[2] / "README.md"


def helm_install_line() -> list[str]:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"^\s*(helm install .*?)(?<!\\)$", text.replace("\\\n", " "), re.MULTILINE)
    assert match, "the README's quick start has no helm install line"
    return shlex.split(match.group(1))


def set_values(argv: list[str]) -> dict[str, Any]:
    """`--set a.b=c` pairs as the values tree Helm builds from them (strings, as the quick start gives)."""
    values: dict[str, Any] = {}
    for flag, pair in itertools.pairwise(argv):
        if flag == "--set":
            key, _, value = pair.partition("=")
            *parents, leaf = key.split(".")
            node = values
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = value
    return values


def test_the_quick_start_installs_the_repositorys_chart_into_gpu_advisor() -> None:
    argv = helm_install_line()
    assert argv[:4] == ["helm", "install", "gpu-advisor", str(CHART.relative_to(README.parent))]
    assert argv[argv.index("-n") + 1] == "gpu-advisor"


@pytest.mark.parametrize("kube", ["v1.30.4", "v1.36.0"])
def test_the_quick_start_renders_objects_that_pass_the_schemas(kube: str) -> None:
    values = set_values(helm_install_line())
    assert values["image"]["repository"] == "registry.example.com/gpu-advisor"
    docs = render(values, kube_version=kube)
    assert {d["kind"] for d in docs} >= {"Deployment", "DaemonSet", "ValidatingWebhookConfiguration"}
    for doc in docs:
        validate(doc, kube)
