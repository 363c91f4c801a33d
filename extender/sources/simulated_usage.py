"""Synthetic usage history for the simulated cluster, so ``gpu-advisor usage`` runs anywhere: each
Running pod's GPU asks from its spec, its node's sharing from the node's labels, the hours and use from
the synthetic DCGM history (``extender.sources.simulated_history``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.advice.rightsize import owner_of_pod
from extender.advice.usage import GpuAsk, PodUsage, gpu_ask, with_dcgm_use
from extender.sources.simulated_history import simulated_history
from extender.sources.snapshot import Snapshot

__all__ = ["simulated_usage", "spec_asks"]


def spec_asks(pod: Mapping[str, Any], node_labels: Mapping[str, str]) -> tuple[GpuAsk, ...]:
    """A Pod object's GPU asks (limits, else requests, summed over containers) on a node so labelled."""
    replicas = str(node_labels.get("nvidia.com/gpu.replicas") or "1")
    strategy = node_labels.get("nvidia.com/gpu.sharing-strategy")
    totals: dict[str, float] = {}
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        for name, value in {**(resources.get("requests") or {}), **(resources.get("limits") or {})}.items():
            totals[name] = totals.get(name, 0.0) + float(value)
    asks = (gpu_ask(k, v, int(replicas) if replicas.isdigit() else 1, strategy) for k, v in totals.items())
    return tuple(a for a in asks if a is not None and a.count > 0)


def simulated_usage(snap: Snapshot, end: float, window_s: float) -> list[PodUsage]:
    """The simulated Running GPU pods over the ``window_s`` before ``end`` (their history's hours)."""
    series = simulated_history(snap, end)
    hours: dict[str, float] = {}
    for s in series:
        hours[s.pod] = max(hours.get(s.pod, 0.0), min(s.hours, window_s / 3600))
    nodes = {
        str((n.get("metadata") or {}).get("name")): (n.get("metadata") or {}).get("labels") or {} for n in snap.nodes
    }
    pods = []
    for pod in snap.pods:
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        labels = nodes.get(str(spec.get("nodeName")), {})
        asks = spec_asks(pod, labels)
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        if asks and (pod.get("status") or {}).get("phase") == "Running":
            pods.append(
                PodUsage(
                    namespace=str(meta.get("namespace") or "default"),
                    name=str(meta.get("name")),
                    owner=owner_of_pod(pod),
                    asks=asks,
                    running_hours=hours.get(key, window_s / 3600),
                    product=labels.get("nvidia.com/gpu.product"),
                    labels=meta.get("labels") or {},
                )
            )
    return with_dcgm_use(pods, series)
