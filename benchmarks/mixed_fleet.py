"""The mixed fleet benchmarks/wire.py measures beside the synthetic one: the simulated cluster's seven
nodes (two DGX-1 V100, an HGX H100, an L40S box, an A100 in MIG mode, four time-sliced T4s, an 8×MI300X),
each with its pods and synthetic telemetry, replicated to any number of nodes (run by wire.py, not on
its own).

Real fleets are mixed like this: MIG and time-sliced nodes, an AMD node, GPUs held by bound pods and
one free GPU whose VRAM a leftover process holds. The synthetic fleet of benchmarks/extender.py is five
NVIDIA machine types with random free sets and nothing bound.
"""

from __future__ import annotations

import copy
import json
from importlib import resources
from typing import Any


def simulated_doc() -> dict[str, Any]:
    """The simulated cluster as its short snapshot form (``extender/sources/simulated_cluster.json``)."""
    text = resources.files("extender.sources").joinpath("simulated_cluster.json").read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


def mixed_fleet(nodes: int) -> dict[str, Any]:
    """``nodes`` nodes, the simulated cluster's seven in turn, the i-th named ``<its name>-<i>``; each copy
    keeps its labels, free GPUs, telemetry and bound pods (renamed with it). A short-form snapshot: it
    is the form that carries telemetry (a ``v1 List`` has none)."""
    doc = simulated_doc()
    base = doc["nodes"]
    pods_of: dict[str, list[dict[str, Any]]] = {}
    for pod in doc.get("pods") or []:
        pods_of.setdefault(pod.get("node"), []).append(pod)
    out_nodes: list[dict[str, Any]] = []
    out_pods: list[dict[str, Any]] = []
    for i in range(nodes):
        entry = copy.deepcopy(base[i % len(base)])
        name = entry["name"] = f"{entry['name']}-{i:05d}"
        out_nodes.append(entry)
        for pod in pods_of.get(base[i % len(base)]["name"], ()):
            out_pods.append({**pod, "name": f"{pod['name']}-{i:05d}", "node": name})
    return {"nodes": out_nodes, "pods": out_pods}
