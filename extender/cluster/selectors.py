"""Which nodes a pod template could ever land on: nodeSelector, required node affinity, tolerations.

This is the part of kube-scheduler's filtering that decides *eligibility* (not capacity); the admission
rules ask it "of the nodes this pod may use, what is the most any of them offers?".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from extender.cluster.state import NodeState

__all__ = ["eligible_nodes", "node_admits"]

_BLOCKING = ("NoSchedule", "NoExecute")
_CORDONED = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def _expression_holds(labels: Mapping[str, str], expr: Mapping[str, Any]) -> bool:
    key, op = str(expr.get("key", "")), str(expr.get("operator", ""))
    values = [str(v) for v in expr.get("values") or []]
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def _affinity_holds(labels: Mapping[str, str], spec: Mapping[str, Any], name: str) -> bool:
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    # Terms are ORed; expressions within a term are ANDed. (matchFields only knows metadata.name.)
    return any(
        all(_expression_holds(labels, e) for e in term.get("matchExpressions") or [])
        and all(_expression_holds({"metadata.name": name}, f) for f in term.get("matchFields") or [])
        for term in terms
    )


def _tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, str]) -> bool:
    for tol in tolerations:
        effect = tol.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        op = tol.get("operator", "Equal")
        key = tol.get("key")
        if op == "Exists" and (not key or key == taint.get("key")):
            return True
        if op == "Equal" and key == taint.get("key") and str(tol.get("value", "")) == taint.get("value", ""):
            return True
    return False


def node_admits(node: NodeState, spec: Mapping[str, Any]) -> str | None:
    """None when the node is eligible for this pod spec, else why not (one short phrase)."""
    selector = spec.get("nodeSelector") or {}
    for key, value in selector.items():
        if node.labels.get(str(key)) != str(value):
            return f"nodeSelector {key}={value} does not match"
    if not _affinity_holds(node.labels, spec, node.name):
        return "required node affinity does not match"
    tolerations = spec.get("tolerations") or []
    for taint in node.taints:
        if taint.get("effect") in _BLOCKING and not _tolerates(tolerations, taint):
            return f"taint {taint.get('key')}={taint.get('value', '')}:{taint.get('effect')} not tolerated"
    # kube-scheduler's NodeUnschedulable: a cordoned node takes only pods that tolerate its taint.
    if node.unschedulable and not _tolerates(tolerations, _CORDONED):
        return "node is cordoned"
    return None


def eligible_nodes(nodes: Iterable[NodeState], spec: Mapping[str, Any]) -> list[NodeState]:
    return [n for n in nodes if node_admits(n, spec) is None]
