"""Pods that ask for GPUs only through DRA claims reach the advisor only without managedResources."""

from __future__ import annotations

import yaml

from gpu_advisor.cli.scheduler_config import managed_resources, scheduler_config
from tests.operate.chart import render


def _extender(text: str) -> dict[str, object]:
    config = yaml.safe_load(text)
    extender: dict[str, object] = config["extenders"][0]
    return extender


def test_the_default_config_names_every_gpu_resource_so_dra_only_pods_are_skipped() -> None:
    names = [r["name"] for r in _extender(scheduler_config())["managedResources"]]  # type: ignore[attr-defined]
    assert names == list(managed_resources())


def test_the_dra_config_drops_managed_resources_and_keeps_everything_else() -> None:
    plain, dra = _extender(scheduler_config()), _extender(scheduler_config(dra=True))
    assert "managedResources" not in dra
    assert {k: v for k, v in plain.items() if k != "managedResources"} == dra
    assert dra["ignorable"] is True  # a down advisor must not stop every pod of the cluster now


def test_the_chart_drops_managed_resources_when_dra_is_set() -> None:
    def extender(values: dict[str, object]) -> dict[str, object]:
        (config_map,) = [d for d in render(values) if d["metadata"]["name"] == "gpu-advisor-scheduler-config"]
        return _extender(config_map["data"]["config.yaml"])

    assert "managedResources" in extender({})
    assert "managedResources" not in extender({"scheduler": {"dra": True}})
