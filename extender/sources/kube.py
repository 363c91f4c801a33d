"""The Kubernetes API server through the kubernetes client: credentials, one list of the GPU cluster,
the node agents' addresses, and errors in one line. The list + watch that keeps the served model
current is ``extender.sources.kube_watch``.

Objects are kept as the raw JSON the API server sends (the same shapes a snapshot holds), trimmed to
what the advisor reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from kubernetes import client, config

from extender.cluster.claims import ANNOTATION_CLAIMS
from extender.cluster.state import (
    ANNOTATION_FREE_GPUS,
    ANNOTATION_TOPOLOGY,
)
from extender.errors import SourceError
from extender.model.gpu_vendor import is_gpu_resource
from extender.model.pods import MODEL_ENV
from extender.sources.agent_scrape import AgentTarget

__all__ = [
    "ApiServerError",
    "agent_targets",
    "api_error_message",
    "kube_api",
    "list_bound_gpu_pods",
    "list_cluster",
    "slim_node",
]


class ApiServerError(SourceError):
    """The API server could not be reached or refused; the message is one line for a person."""


def api_error_message(exc: Exception) -> str:
    """One line for whatever the kubernetes client raised: the status, reason and the server's message."""
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None)
    if status:
        body = getattr(exc, "body", None)
        try:
            message = json.loads(body).get("message") if body else None
        except (ValueError, AttributeError):
            message = None
        return f"API server answered {status} {reason}" + (f": {message}" if message else "")
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def kube_api(kubeconfig: str | None = None) -> Any:
    """In-cluster credentials when running in a pod, else the kubeconfig (``--kubeconfig`` or default)."""
    try:
        config.load_incluster_config()  # type: ignore[no-untyped-call]
    except config.ConfigException:
        config.load_kube_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    return client.CoreV1Api()


def slim_node(obj: dict[str, Any]) -> dict[str, Any]:
    """What the advisor reads of a Node; its parts that equal another node's (resources, spec, the
    agent's topology text) are that node's very objects: read only."""
    meta = obj.get("metadata") or {}
    annotations = {
        k: _shared(v) if k != ANNOTATION_CLAIMS else v  # claims differ per node and per binding: never shared
        for k, v in (meta.get("annotations") or {}).items()
        if k in (ANNOTATION_TOPOLOGY, ANNOTATION_FREE_GPUS, ANNOTATION_CLAIMS)
    }
    status = obj.get("status") or {}
    spec = obj.get("spec") or {}
    return {
        "metadata": {
            "name": meta.get("name"),
            "uid": meta.get("uid"),  # the owner of the node's claims Lease (``extender.cluster.claim_leases``)
            "labels": meta.get("labels") or {},
            "annotations": annotations,
            "resourceVersion": meta.get("resourceVersion"),
        },
        "spec": _shared({"taints": spec.get("taints") or [], "unschedulable": spec.get("unschedulable", False)}),
        "status": _shared({"allocatable": status.get("allocatable") or {}, "capacity": status.get("capacity") or {}}),
    }


# Equal parts of the nodes kept, one object each, by their content: a fleet is a few machine types,
# and at 5,000 nodes a copy per node of each (a topology annotation is kilobytes) was 8-13 MiB of the
# watched model. Keyed by tuples of the parts' own values, so a part no other node shares costs a
# tuple, not a second copy of its text.
_SHARED: dict[Hashable, Any] = {}
_Part = TypeVar("_Part")


def _shared(part: _Part) -> _Part:
    try:
        key = _frozen(part)
        found = _SHARED.get(key)
    except TypeError:  # something unhashable where JSON has none: kept as it is
        return part
    if found is None:
        if len(_SHARED) >= 16_384:
            _SHARED.clear()
        found = _SHARED[key] = part
    return found


def _frozen(part: Any) -> Hashable:
    if isinstance(part, dict):
        return (dict, tuple(sorted((k, _frozen(v)) for k, v in part.items())))
    if isinstance(part, list):
        return (list, tuple(map(_frozen, part)))
    return (type(part), part)  # True and 1 are equal keys: the type tells them apart


def _slim_pod(obj: dict[str, Any]) -> dict[str, Any]:
    """What the advisor reads of a GPU pod, and nothing more (env values other than model names may be secrets)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    containers = [
        {
            "name": c.get("name"),
            "image": c.get("image"),
            "command": c.get("command"),
            "args": c.get("args"),
            "resources": c.get("resources") or {},
            "env": [e for e in c.get("env") or [] if e.get("name") in MODEL_ENV and "value" in e],
        }
        for c in spec.get("containers") or []
    ]
    keep_spec = {
        k: spec[k]
        for k in (
            "nodeName",
            "nodeSelector",
            "affinity",
            "tolerations",
            "priority",
            "priorityClassName",
            "schedulerName",
            "initContainers",
            "resourceClaims",
        )
        if k in spec
    }
    status = obj.get("status") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "labels", "annotations", "creationTimestamp", "ownerReferences")
            if k in meta
        },
        "spec": {**keep_spec, "containers": containers},
        "status": {k: status[k] for k in ("phase", "conditions", "startTime", "resourceClaimStatuses") if k in status},
    }


def list_cluster(api: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One list of Nodes and of the Pods that ask for GPUs (bound or pending), trimmed: for explain,
    diagnose and ``gpu-advisor snapshot``."""
    nodes = json.loads(api.list_node(_preload_content=False).data).get("items") or []
    pods = json.loads(api.list_pod_for_all_namespaces(_preload_content=False).data).get("items") or []
    slim_nodes = [{"apiVersion": "v1", "kind": "Node", **slim_node(n)} for n in nodes]
    return slim_nodes, _gpu_pods(pods)


def list_bound_gpu_pods(api: Any, timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """One list of the Pods bound to a node that ask for GPUs, trimmed: what a defragmentation plan on the
    served model reads (its owners, labels and priority, which the model does not keep)."""
    fields = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
    resp = api.list_pod_for_all_namespaces(field_selector=fields, _preload_content=False, _request_timeout=timeout_s)
    return _gpu_pods(json.loads(resp.data).get("items") or [])


def _gpu_pods(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    gpu_pods = []
    for pod in pods:
        limits = [c.get("resources") or {} for c in (pod.get("spec") or {}).get("containers") or []]
        asks = any(is_gpu_resource(k) for r in limits for part in ("limits", "requests") for k in r.get(part) or {})
        asks = asks or bool((pod.get("spec") or {}).get("resourceClaims"))  # DRA: extender.cluster.dra_view
        if asks and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            gpu_pods.append(_slim_pod(pod))
    return gpu_pods


def agent_targets(api: Any, namespace: str = "gpu-advisor", port: int = 9401) -> Callable[[], list[AgentTarget]]:
    """The running node agents (pods labelled app.kubernetes.io/name=gpu-advisor-agent): each one's
    /metrics URL and the node its pod runs on, which is what its telemetry is attributed to."""

    def targets() -> list[AgentTarget]:
        resp = api.list_namespaced_pod(
            namespace, label_selector="app.kubernetes.io/name=gpu-advisor-agent", _preload_content=False
        )
        found = []
        for pod in json.loads(resp.data).get("items") or []:
            status, spec = pod.get("status") or {}, pod.get("spec") or {}
            ip, node = status.get("podIP"), spec.get("nodeName")
            if status.get("phase") == "Running" and isinstance(ip, str) and ip and isinstance(node, str) and node:
                found.append(AgentTarget(f"http://{ip}:{port}/metrics", node))
        return found

    return targets
