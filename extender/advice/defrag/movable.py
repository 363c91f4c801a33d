"""Which bound pods a defragmentation plan may move, and why every other one stays where it is.

A move is an eviction: the pod's controller makes a new one, and the scheduler places it. So a pod
may move only when something recreates it and nobody said no:

- marked ``gpu-advisor.io/movable: "false"`` (label or annotation): stays, whatever owns it;
- no controller (a bare pod): stays, nothing would recreate it, even when marked ``"true"``;
- a DaemonSet's pod: stays, its controller recreates it on the same node;
- a ReplicaSet's (a Deployment's replicas): may move; any other controller (StatefulSet, Job …)
  only when marked ``"true"``;
- a priority above the pod the plan is for: stays (a plan never disturbs more important work);
- a PodDisruptionBudget over it that allows no disruption now: stays; one that allows some lets a
  plan use at most that many of them (``Movable.allowance``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MOVABLE", "Movable", "movable_pods", "pod_key"]

MOVABLE = "gpu-advisor.io/movable"
_RECREATED = frozenset({"ReplicaSet", "Deployment"})


@dataclass(frozen=True)
class Movable:
    """The pods a plan may move, the ones left alone with why, and the PDBs' allowances."""

    keys: frozenset[str]
    left: Mapping[str, str] = field(default_factory=dict)  # pod key → why it stays
    allowance: Mapping[str, int] = field(default_factory=dict)  # PDB namespace/name → disruptions allowed
    guards: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # pod key → its PDBs

    def within(self, used: Mapping[str, int], key: str) -> bool:
        """May ``key`` move after the moves that used ``used`` of each PDB's allowance?"""
        return key in self.keys and all(used.get(b, 0) < self.allowance.get(b, 0) for b in self.guards.get(key, ()))

    def left_alone(self) -> list[tuple[str, str]]:
        return sorted(self.left.items())


def pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


def _marked(meta: Mapping[str, Any]) -> str | None:
    """The pod's own word, "true" or "false" (the annotation over the label); None when silent."""
    for section in ("annotations", "labels"):
        value = (meta.get(section) or {}).get(MOVABLE)
        if value is not None:
            return str(value).strip().lower()
    return None


def _owner_kind(meta: Mapping[str, Any]) -> str | None:
    refs = [r for r in meta.get("ownerReferences") or [] if isinstance(r, Mapping)]
    controller = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    return str(controller.get("kind", "")) if controller is not None else None


def _why_not(pod: Mapping[str, Any], ceiling: int | None) -> str | None:
    """None when the pod may move, else why it stays (one phrase)."""
    meta = pod.get("metadata") or {}
    mark, owner = _marked(meta), _owner_kind(meta)
    if mark == "false":
        return f'marked {MOVABLE}: "false"'
    if owner is None:
        return "a bare pod: no controller would recreate it"
    if owner == "DaemonSet":
        return "a DaemonSet's pod: it belongs on its node"
    if owner not in _RECREATED and mark != "true":
        return f'owned by a {owner}: moves only when marked {MOVABLE}: "true"'
    priority = (pod.get("spec") or {}).get("priority") or 0
    if ceiling is not None and isinstance(priority, int) and priority > ceiling:
        return f"priority {priority} above the pending pod's {ceiling}"
    return None


def _selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A label selector (matchLabels and matchExpressions); an empty one selects every pod."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(str(key)) != str(value):
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = str(expr.get("key")), expr.get("operator"), [str(v) for v in expr.get("values") or []]
        present = key in labels
        holds = {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(str(op), False)
        if not holds:
            return False
    return True


def _budgets(pdbs: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, Mapping[str, Any], int]]:
    """(key, namespace, selector, disruptions allowed) per PodDisruptionBudget; allowed is its status's."""
    out = []
    for pdb in pdbs:
        meta, spec, status = pdb.get("metadata") or {}, pdb.get("spec") or {}, pdb.get("status") or {}
        allowed = status.get("disruptionsAllowed")
        allowed = allowed if isinstance(allowed, int) and not isinstance(allowed, bool) else 0
        namespace = str(meta.get("namespace") or "default")
        out.append((f"{namespace}/{meta.get('name', '')}", namespace, spec.get("selector") or {}, max(allowed, 0)))
    return out


def movable_pods(
    pods: Iterable[Mapping[str, Any]], pdbs: Iterable[Mapping[str, Any]] = (), ceiling: int | None = None
) -> Movable:
    """Sort the bound GPU pods ``pods`` into movable and left alone (``ceiling``: the priority of the pod
    the plan is for; None for a fleet plan)."""
    budgets = _budgets(pdbs)
    keys: set[str] = set()
    left: dict[str, str] = {}
    guards: dict[str, tuple[str, ...]] = {}
    for pod in pods:
        key, meta = pod_key(pod), pod.get("metadata") or {}
        why = _why_not(pod, ceiling)
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        namespace = str(meta.get("namespace") or "default")
        mine = tuple(b for b, ns, sel, _ in budgets if ns == namespace and _selects(sel, labels))
        closed = [b for b in mine if not any(k == b and n > 0 for k, _, _, n in budgets)]
        if why is None and closed:
            why = f"PodDisruptionBudget {closed[0]} allows no disruption now"
        if why is None:
            keys.add(key)
            guards[key] = mine
        else:
            left[key] = why
    allowance = {b: n for b, _, _, n in budgets}
    return Movable(frozenset(keys), left, allowance, guards)
