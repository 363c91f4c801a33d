"""A GPU pod's workload is the owner people scale: Deployment over ReplicaSet, CronJob over Job, the
LeaderWorkerSet or JobSet its labels name; a pod gone from the cluster is read from its name."""

from __future__ import annotations

from typing import Any

import pytest

from extender.advice.rightsize import Owner, owner_of_name, owner_of_pod, pod_facts
from extender.cluster.state import ClusterState
from extender.sources.pod_index import PodIndex
from gpu_advisor.history_sources import history_source


def _pod(name: str, refs: list[dict[str, Any]] | None = None, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ml", "ownerReferences": refs or [], **meta}}


def _ref(kind: str, name: str, controller: bool = True) -> dict[str, Any]:
    return {"kind": kind, "name": name, "controller": controller}


@pytest.mark.parametrize(
    ("pod", "owner"),
    [
        (
            _pod(
                "web-6f7c9d8b5-abcde", [_ref("ReplicaSet", "web-6f7c9d8b5")], labels={"pod-template-hash": "6f7c9d8b5"}
            ),
            ("Deployment", "web"),
        ),
        (_pod("web-6f7c9d8b5-abcde", [_ref("ReplicaSet", "web-6f7c9d8b5")]), ("ReplicaSet", "web-6f7c9d8b5")),
        (_pod("db-0", [_ref("StatefulSet", "db")]), ("StatefulSet", "db")),
        (_pod("eval-29412345-xkq2p", [_ref("Job", "eval-29412345")]), ("CronJob", "eval")),
        (_pod("train-xkq2p", [_ref("Job", "train")]), ("Job", "train")),
        (
            _pod("lws-0", [_ref("StatefulSet", "lws")], labels={"leaderworkerset.sigs.k8s.io/name": "llama"}),
            ("LeaderWorkerSet", "llama"),
        ),
        (
            _pod("js-w-0-0-x", [_ref("Job", "js-w-0")], labels={"jobset.sigs.k8s.io/jobset-name": "js"}),
            ("JobSet", "js"),
        ),
        (_pod("x", [_ref("Workflow", "wf", controller=False), _ref("Job", "step", controller=True)]), ("Job", "step")),
        (_pod("solo"), ("Pod", "solo")),
    ],
)
def test_a_pods_owner_is_the_workload_people_scale(pod: dict[str, Any], owner: tuple[str, str]) -> None:
    assert owner_of_pod(pod) == Owner("ml", *owner)


@pytest.mark.parametrize(
    ("name", "owner"),
    [
        ("chat-7d9f8b6c5b-x2x4z", ("Deployment", "chat")),  # <deployment>-<template hash>-<5 chars>
        ("notebook-0", ("Pod", "notebook-0")),  # a StatefulSet's ordinal is not told from a name
        ("chat-aeiou12-x2x4z", ("Pod", "chat-aeiou12-x2x4z")),  # vowels: no generated suffix
    ],
)
def test_a_pod_gone_from_the_cluster_is_read_from_its_name(name: str, owner: tuple[str, str]) -> None:
    assert owner_of_name("ml", name) == Owner("ml", *owner)


def test_pod_facts_know_owners_and_latency_marks_and_fall_back_to_names() -> None:
    facts = pod_facts([_pod("solo", annotations={"gpu-advisor.io/latency-sensitive": "True"}), _pod("batch")])
    assert facts.latency_sensitive == {"ml/solo": True, "ml/batch": False}
    assert facts.owner_of("ml/solo") == Owner("ml", "Pod", "solo")
    assert facts.owner_of("ml/web-6f7c9d8b5-x7kpq") == Owner("ml", "Deployment", "web")
    assert str(facts.owner_of("ml/batch")) == "ml/Pod/batch"


def _watched_pod(name: str, uid: str, owner: tuple[str, str], **labels: str) -> dict[str, Any]:
    """A Pod as the API server watch sends it: bound to a node, with its controller reference."""
    return {
        "metadata": {
            "name": name,
            "namespace": "serving",
            "uid": uid,
            "labels": labels,
            "ownerReferences": [{"kind": owner[0], "name": owner[1], "controller": True}],
        },
        "spec": {"nodeName": "gpu-node-a", "containers": [{"name": "main"}]},
        "status": {"phase": "Running", "podIP": "10.0.0.7"},
    }


def test_the_live_watchs_pods_carry_their_owner_references_to_the_history_reports() -> None:
    index = PodIndex()
    # A StatefulSet's pod name has no Deployment shape: only its ownerReferences can tell its owner.
    index.reset([_watched_pod("vector-db-0", "u1", ("StatefulSet", "vector-db"))])
    index.put(
        "ADDED",
        _watched_pod("chat-6f7b9c-abcde", "u2", ("ReplicaSet", "chat-6f7b9c"), **{"pod-template-hash": "6f7b9c"}),
    )
    index.put("ADDED", _watched_pod("eval-29412345-zzzzz", "u3", ("Job", "eval-29412345")))
    index.put("DELETED", _watched_pod("eval-29412345-zzzzz", "u3", ("Job", "eval-29412345")))
    live = history_source("kube", "http://127.0.0.1:9", ClusterState("live"), index)
    assert live is not None
    facts = pod_facts(live.pods())
    assert dict(facts.owners) == {
        "serving/vector-db-0": Owner("serving", "StatefulSet", "vector-db"),
        "serving/chat-6f7b9c-abcde": Owner("serving", "Deployment", "chat"),
    }
