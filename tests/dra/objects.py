"""The DRA test objects: captured from a real v1.36 control plane, plus a few made by hand."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

DRA = Path(__file__).parents[1] / "data" / "dra"


def load(name: str) -> dict[str, Any]:
    doc = json.loads((DRA / name).read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def cluster_items(allocated: bool = True) -> list[dict[str, Any]]:
    """Two DRA nodes of 4 H100 each, their slices, the two-GPU claim (allocated on dra-node-2, or not
    yet), the one- and two-GPU claim templates, and (when allocated) the pod bound with the claim."""
    claim = load("dra-resourceclaim-allocated.json")
    items = [*load("handmade-nodes.json")["items"], load("dra-resourceslice.json")]
    items += [load("handmade-resourceslice-node-2.json"), load("dra-resourceclaimtemplate.json")]
    items.append(load("handmade-resourceclaimtemplate-two-gpus.json"))
    if not allocated:
        claim = copy.deepcopy(claim)
        del claim["status"]
        return [*items, claim]
    return [*items, claim, load("dra-pod-bound.json")]


def pending_pod(claim: dict[str, str]) -> dict[str, Any]:
    """The captured DRA pod, not yet bound, asking through ``claim`` (resourceClaimName or template)."""
    pod: dict[str, Any] = copy.deepcopy(load("extender-filter-dra-pod.json")["Pod"])
    pod["spec"]["resourceClaims"] = [{"name": "gpus", **claim}]
    return pod


def example_cluster() -> dict[str, Any]:
    """``tests/data/dra/dra-cluster.json``: the allocated cluster as a snapshot file (a Kubernetes List)."""
    return {"apiVersion": "v1", "kind": "List", "time": "2026-12-02T19:00:00Z", "items": cluster_items()}
