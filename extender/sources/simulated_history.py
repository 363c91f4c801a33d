"""Synthetic GPU history for the simulated cluster, so ``gpu-advisor rightsize`` runs anywhere.

``simulated_history.json`` beside this module gives, per simulated pod, its GPUs' SM activity and VRAM
statistics and the hours observed; the product and GPU memory come from the node the pod is bound to.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

from extender.advice.rightsize import GpuSeries
from extender.sources.snapshot import Snapshot

__all__ = ["simulated_history"]


def _node_facts(snap: Snapshot) -> dict[str, tuple[str | None, float | None]]:
    facts = {}
    for node in snap.nodes:
        meta = node.get("metadata") or {}
        labels = meta.get("labels") or {}
        memory = labels.get("nvidia.com/gpu.memory")
        facts[str(meta.get("name"))] = (labels.get("nvidia.com/gpu.product"), float(memory) if memory else None)
    return facts


def _series(
    key: str, node: str, facts: tuple[str | None, float | None], row: Mapping[str, Any], end: float
) -> list[GpuSeries]:
    product, memory = facts
    p50, p95, peak_sm, mean = (float(v) for v in row["sm"])
    vram_p95, vram_peak = (float(v) * 1024 for v in row["vram_gib"])
    hours = float(row["hours"])
    mig = bool(row.get("mig"))
    return [
        GpuSeries(
            pod=key,
            node=node,
            gpu=f"#{i}:mig{i}" if mig else f"#{i}",
            product=product,
            memory_total_mib=memory,
            sm_p50=p50,
            sm_p95=p95,
            sm_max=peak_sm,
            sm_mean=mean,
            vram_p95_mib=vram_p95,
            vram_peak_mib=vram_peak,
            first=end - hours * 3600,
            last=end,
            hours=hours,
            mig=mig,
        )
        for i in range(int(row["gpus"]))
    ]


def simulated_history(snap: Snapshot, end: float) -> list[GpuSeries]:
    """The simulated pods' GPU series over the hours before ``end``."""
    text = resources.files(__package__).joinpath("simulated_history.json").read_text(encoding="utf-8")
    rows = json.loads(text)["pods"]
    facts = _node_facts(snap)
    found = []
    for pod in snap.pods:
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        node = str(spec.get("nodeName") or "")
        if key in rows and node:
            found += _series(key, node, facts.get(node, (None, None)), rows[key], end)
    return found
