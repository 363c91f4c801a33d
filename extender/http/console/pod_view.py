"""The pod view: where a GPU pod runs, the GPUs it holds on that node's drawing, how the extender
judges its shape on every node now — the verdict, score breakdown and the alternatives it beats — and
the admission advisor's findings on it (when the source lists Pod objects)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.cluster.state import BoundPod, NodeState
from extender.http.advisor import Advisor

__all__ = ["find_pod", "findings", "pod_gpus", "pod_view"]


def find_pod(advisor: Advisor, key: str) -> tuple[NodeState, BoundPod] | None:
    for node in advisor.state.nodes():
        for pod in node.pods:
            if pod.key == key:
                return node, pod
    return None


def pod_gpus(node: NodeState, pod: BoundPod) -> tuple[list[int], str]:
    """The GPUs the pod holds, and how that is known: the model's holders (an exporter's attribution or a
    prediction), else every allocated GPU when it is the node's only GPU pod, else not known."""
    held = sorted(gpu for gpu, key in node.holders.items() if key == pod.key)
    if held:
        return held, "attributed"
    topo = node.topology
    if topo is not None and node.free_gpus is not None and [p.key for p in node.pods] == [pod.key]:
        return sorted(set(topo.indices) - set(node.free_gpus)), "the node's only GPU pod"
    return [], f"not reported: the node's allocated GPUs are shared by {len(node.pods)} pods"


def findings(advisor: Advisor, pod: BoundPod) -> list[dict[str, str]] | None:
    """The admission rules' findings on the pod's own object (None: no object to read, or no rules)."""
    if advisor.pod_objects is None or advisor.advise is None:
        return None
    found: Mapping[str, Any] | None = next(
        (p for p in advisor.pod_objects() if _key(p) == pod.key),
        None,
    )
    if found is None:
        return None
    nodes = advisor.state.nodes_by_name().values()
    return advisor.advise("Pod", pod.name, pod.namespace, found, pod.request, nodes)


def _key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"


def pod_view(advisor: Advisor, key: str) -> dict[str, Any] | None:
    found = find_pod(advisor, key)
    if found is None:
        return None
    node, pod = found
    gpus, known = pod_gpus(node, pod)
    nodes = advisor.state.nodes_by_name()
    verdicts = advisor.judge_apart(pod.request, sorted(nodes), nodes)
    ranked = sorted((v for v in verdicts if v.fits), key=lambda v: (-v.score, v.node))
    return {
        "pod": pod.key,
        "request": pod.request.describe(),
        "node": node.name,
        "gpus": gpus,
        "gpus_known_by": known,
        "here": next((v.to_dict() for v in verdicts if v.node == node.name), None),
        "ranked": [v.to_dict() for v in ranked],
        "filtered": [v.to_dict() for v in verdicts if not v.fits],
        "findings": findings(advisor, pod),
    }
