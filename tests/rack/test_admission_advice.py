"""Admission advice: a multi-node job on a cluster with NVLink cliques, with nothing to keep it in one."""

from __future__ import annotations

from typing import Any

import pytest

from extender.model.pods import pod_request
from extender.sources.snapshot import simulated_cluster
from webhook.rules import ClusterView, evaluate_rules, workload_from

RACK = ClusterView(tuple(simulated_cluster(now=1_796_000_000, rack=True).cluster("sim").nodes()))
PLAIN = ClusterView(tuple(simulated_cluster(now=1_796_000_000).cluster("sim").nodes()))


def template(args: list[str] | None = None, env: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "trainer", "resources": {"limits": {"nvidia.com/gpu": "4"}}}
    if args:
        container["command"] = ["torchrun", *args, "train.py"]
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return {"metadata": meta, "spec": {"containers": [container]}}


def codes(doc: dict[str, Any], view: ClusterView = RACK) -> dict[str, str]:
    found = evaluate_rules(workload_from("Job", "train", "ml", doc, pod_request(doc)), view)
    return {f.code: f.message for f in found}


@pytest.mark.parametrize(
    ("doc", "signal"),
    [
        (template(args=["--nnodes", "8", "--nproc-per-node", "4"]), "--nnodes 8"),
        (template(args=["--nnodes=2:8"]), "--nnodes 2:8"),  # elastic min:max
        (template(env={"PET_NNODES": "8"}), "PET_NNODES=8"),
        (template(env={"MASTER_ADDR": "train-0.train"}), "MASTER_ADDR set"),
    ],
)
def test_a_multi_node_job_with_no_pod_group_is_warned_where_there_are_cliques(doc: dict[str, Any], signal: str) -> None:
    message = codes(doc)["multi-node-without-group"]
    assert message == f"multi-node job ({signal}) with no pod group: its pods may not share one NVLink clique"


@pytest.mark.parametrize(
    ("why", "doc", "view"),
    [
        ("one node", template(args=["--nnodes", "1"]), RACK),
        (
            "a JobSet: the advisor keeps it together",
            template(args=["--nnodes", "8"], labels={"jobset.sigs.k8s.io/jobset-name": "t"}),
            RACK,
        ),
        ("no cliques in the cluster", template(args=["--nnodes", "8"]), PLAIN),
    ],
)
def test_no_warning_where_nothing_can_straddle(why: str, doc: dict[str, Any], view: ClusterView) -> None:
    assert "multi-node-without-group" not in codes(doc, view), why


def test_a_clique_pod_affinity_keeps_it_together_by_itself() -> None:
    doc = template(args=["--nnodes", "8"])
    term = {"topologyKey": "nvidia.com/gpu.clique", "labelSelector": {"matchLabels": {"job": "train"}}}
    doc["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    assert "multi-node-without-group" not in codes(doc)
