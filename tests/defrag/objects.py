"""Small Node and Pod objects for defragmentation tests: whole NVIDIA GPUs, counted by allocation."""

from __future__ import annotations

from typing import Any

from extender.advice.defrag import Judge, World
from extender.scoring import ScoringPolicy
from extender.scoring.workload import NO_MIX, Mix
from extender.sources.snapshot import parse_snapshot

T0 = 1_800_000_000.0


def node(name: str, gpus: int) -> dict[str, Any]:
    amounts = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": str(gpus), "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": amounts}}


def pod(name: str, gpus: int, on: str | None = None, owner: str | None = "ReplicaSet", **meta: Any) -> dict[str, Any]:
    asks = {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": str(gpus)}
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": asks, "limits": asks}}]}
    metadata: dict[str, Any] = {"name": name, "namespace": "ml", **meta}
    if owner is not None:
        metadata["ownerReferences"] = [{"kind": owner, "name": f"{name}-owner", "controller": True}]
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    if on is not None:
        spec["nodeName"] = on
        out["status"] = {"phase": "Running", "startTime": "2027-01-15T08:00:00Z"}
    return out


def world(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> World:
    doc = {"apiVersion": "v1", "kind": "List", "items": [*nodes, *pods]}
    snap = parse_snapshot(doc, now=T0)
    return World.of(snap.nodes, snap.pods, snap.cluster("test").nodes_by_name())


def judge(mix: Mix = NO_MIX) -> Judge:
    return Judge(ScoringPolicy(), T0, None, mix)
