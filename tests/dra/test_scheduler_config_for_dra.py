"""Pods that ask for GPUs only through DRA claims reach the advisor only without managedResources: the
default now; ``--managed-resources`` (and the chart's ``scheduler.managedResources``) lists them."""

from __future__ import annotations

from typing import Any

import yaml

from gpu_advisor.cli.scheduler_config import managed_resources, scheduler_config
from tests.operate.chart import render


def _extender(text: str) -> dict[str, object]:
    config = yaml.safe_load(text)
    extender: dict[str, object] = config["extenders"][0]
    return extender


def test_the_default_config_has_no_managed_resources_so_dra_only_pods_are_seen() -> None:
    assert "managedResources" not in _extender(scheduler_config())


def test_the_managed_config_adds_the_list_and_keeps_everything_else() -> None:
    plain, managed = _extender(scheduler_config()), _extender(scheduler_config(managed=True))
    assert [r["name"] for r in managed["managedResources"]] == list(managed_resources())  # type: ignore[attr-defined]
    # The managed list is whole GPUs, MIG and AMD: kube-scheduler counts those itself, so without the
    # advisor they keep scheduling (ignorable) and kube-scheduler binds them; every other field is the same.
    differs = {"managedResources", "ignorable", "bindVerb"}
    same = {k: v for k, v in plain.items() if k not in differs}
    assert {k: v for k, v in managed.items() if k not in differs} == same
    assert managed["ignorable"] is True and "bindVerb" not in managed
    # Every pod reaches the default entry, shares kube-scheduler cannot count among them: they wait for it.
    assert plain["ignorable"] is False and plain["bindVerb"] == "bind"


def test_the_chart_lists_managed_resources_only_when_asked() -> None:
    def extender(values: dict[str, object]) -> dict[str, object]:
        (config_map,) = [d for d in render(values) if d["metadata"]["name"] == "gpu-advisor-scheduler-config"]
        return _extender(config_map["data"]["config.yaml"])

    assert "managedResources" not in extender({})
    assert "managedResources" not in extender({"scheduler": {"dra": True}})
    assert "managedResources" in extender({"scheduler": {"managedResources": True}})


def test_the_advisor_reads_the_charts_scheduler_config_so_admission_knows_who_calls_it() -> None:
    def advisor(values: dict[str, object]) -> Any:
        rendered = render(values)
        (deployment,) = [d for d in rendered if d["kind"] == "Deployment" and d["metadata"]["name"] == "gpu-advisor"]
        return deployment["spec"]["template"]["spec"]

    pod = advisor({})
    (container,) = pod["containers"]
    assert "--scheduler-config=/etc/gpu-advisor/scheduler/config.yaml" in container["args"]
    assert {"name": "scheduler-config", "configMap": {"name": "gpu-advisor-scheduler-config"}} in pod["volumes"]
    (without,) = advisor({"scheduler": {"enabled": False}})["containers"]
    assert not any(a.startswith("--scheduler-config") for a in without["args"])
