"""Node and Pod objects as the API server returns them, and its Status bodies, for the fake API server's tests."""

from __future__ import annotations

from typing import Any

__all__ = ["node", "pod", "status"]


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


def node(
    name: str, gpus: int = 8, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
        "status": {
            "allocatable": {"nvidia.com/gpu": str(gpus), "cpu": "32"},
            "capacity": {"nvidia.com/gpu": str(gpus), "cpu": "32"},
        },
    }


def pod(
    name: str, node_name: str, gpus: int, bound_at: str = "2026-12-02T10:00:00Z", phase: str = "Running"
) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        },
        "status": {
            "phase": phase,
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": bound_at}],
        },
    }
