"""A scoring policy is an install value in both manifests: the chart's ``advisor.policy`` and kustomize's
``components/policy`` put it in a ConfigMap mounted in the advisor and passed as ``--policy``, and the
file the advisor reads there is one ``--policy`` accepts. Without it the advisor serves the defaults."""

from __future__ import annotations

import shutil
from pathlib import Path

from extender.sources.policy_file import load_policy
from tests.manifests.rendering import MANIFESTS, Doc, find, pod_spec
from tests.manifests.rendering import render as kustomize
from tests.operate.chart import render as chart

FLAG = "--policy=/etc/gpu-advisor/policy/policy.yaml"


def _read_by_the_advisor(docs: list[Doc], tmp_path: Path) -> tuple[list[str], str]:
    """The advisor's arguments, and the policy file it finds at ``--policy`` (the ConfigMap its volume
    names, mounted where the flag points)."""
    spec = pod_spec(docs, "Deployment", "gpu-advisor")
    advisor = next(c for c in spec["containers"] if c["name"] == "advisor")
    mount = next(m for m in advisor["volumeMounts"] if m["name"] == "policy")
    volume = next(v for v in spec["volumes"] if v["name"] == "policy")
    config_map = next(
        d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == volume["configMap"]["name"]
    )
    assert f"--policy={mount['mountPath']}/policy.yaml" in advisor["args"] and mount["readOnly"] is True
    path = tmp_path / "policy.yaml"
    path.write_text(config_map["data"]["policy.yaml"])
    return advisor["args"], str(path)


def test_the_charts_advisor_policy_is_mounted_and_passed(tmp_path: Path) -> None:
    docs = chart({"advisor": {"policy": {"reserve_whole_gpus": True, "reserve_hold_limit_s": 120}}})
    args, path = _read_by_the_advisor(docs, tmp_path)
    policy = load_policy(path)
    assert FLAG in args and policy.reserve_whole_gpus is True and policy.reserve_hold_limit_s == 120
    template = find(docs, "Deployment", "gpu-advisor")["spec"]["template"]
    assert "checksum/policy" in template["metadata"]["annotations"], "a changed policy rolls the replicas"


def test_kustomizes_policy_component_is_mounted_and_passed(tmp_path: Path) -> None:
    copy = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, copy)
    kustomization = copy / "kustomization.yaml"
    text = kustomization.read_text()
    assert "# components:\n" in text and "#   - components/policy\n" in text, "the commented entry the docs name"
    text = text.replace("# components:\n", "components:\n").replace(
        "#   - components/policy\n", "  - components/policy\n"
    )
    kustomization.write_text(text)
    args, path = _read_by_the_advisor(kustomize(copy), tmp_path)
    assert FLAG in args and load_policy(path).reserve_whole_gpus is True  # the example the component ships


def test_without_a_policy_the_advisor_serves_the_defaults(rendered: list[Doc]) -> None:
    for docs in (rendered, chart()):
        advisor = pod_spec(docs, "Deployment", "gpu-advisor")["containers"][0]
        assert not any(arg.startswith("--policy") for arg in advisor["args"])
        assert not any(
            d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("gpu-advisor-policy") for d in docs
        )
