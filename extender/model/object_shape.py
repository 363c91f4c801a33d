"""The shape of the parts of a Pod or Node that gpu-advisor reads, checked once where an object comes in.

The API server never hands out a Pod whose ``metadata`` is a string or whose ``nodeSelector`` is a
list, but a body sent to the extender, the webhook or the dry-run can hold anything. The readers
(``pods``, ``cluster.selectors``, ``cluster.state``) are written for Kubernetes' own types; rather than
guard every ``.get`` in them, an object is checked against the shape of the fields they read, and
refused with the path of the first field that does not fit.

A shape is a type tuple (a scalar), ``[shape]`` (a list of them), ``{name: shape}`` (an object with
those fields, others ignored) or ``{str: shape}`` (a map whose every value has that shape). ``null``
fits every shape: Kubernetes leaves empty fields out or sends them as null. Scalars where Kubernetes
has strings accept numbers and booleans too, as a hand-written YAML manifest has them (``gpu: 1``);
the readers turn them into strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["NODE_SHAPE", "POD_SHAPE", "Shape", "shape_problem"]

Shape = Any  # tuple[type, ...] | list[Shape] | dict[str | type[str], Shape]

SCALAR: tuple[type, ...] = (str, int, float, bool)
STRING_MAP: Shape = {str: SCALAR}
QUANTITIES: Shape = {str: SCALAR}  # "4", 4, "16Gi": their values are checked where they are read

_META: Shape = {
    "name": SCALAR,
    "namespace": SCALAR,
    "uid": SCALAR,
    "resourceVersion": SCALAR,
    "labels": STRING_MAP,
    "annotations": STRING_MAP,
    "ownerReferences": [{"kind": SCALAR, "name": SCALAR, "uid": SCALAR}],
}
_SELECTOR_REQUIREMENT: Shape = {"key": SCALAR, "operator": SCALAR, "values": [SCALAR]}
_NODE_SELECTOR_TERM: Shape = {"matchExpressions": [_SELECTOR_REQUIREMENT], "matchFields": [_SELECTOR_REQUIREMENT]}
_CONTAINER: Shape = {
    "name": SCALAR,
    "restartPolicy": SCALAR,
    "resources": {"limits": QUANTITIES, "requests": QUANTITIES, "claims": [{"name": SCALAR}]},
}
POD_SHAPE: Shape = {
    "metadata": _META,
    "spec": {
        "containers": [_CONTAINER],
        "initContainers": [_CONTAINER],
        "nodeName": SCALAR,
        "nodeSelector": STRING_MAP,
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [_NODE_SELECTOR_TERM]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": SCALAR, "preference": _NODE_SELECTOR_TERM}
                ],
            },
        },
        "tolerations": [
            {"key": SCALAR, "operator": SCALAR, "value": SCALAR, "effect": SCALAR, "tolerationSeconds": SCALAR}
        ],
        "resourceClaims": [{"name": SCALAR, "resourceClaimName": SCALAR, "resourceClaimTemplateName": SCALAR}],
        "overhead": QUANTITIES,
        "priority": SCALAR,
        "schedulerName": SCALAR,
    },
}
NODE_SHAPE: Shape = {
    "metadata": _META,
    "spec": {"unschedulable": SCALAR, "taints": [{"key": SCALAR, "value": SCALAR, "effect": SCALAR}]},
    "status": {"allocatable": QUANTITIES, "capacity": QUANTITIES},
}


def shape_problem(value: Any, shape: Shape, where: str = "") -> str | None:
    """None when ``value`` fits ``shape``, else ``<where>.<path> must be <kind>``, naming the first field
    that does not."""
    if value is None:
        return None
    if isinstance(shape, tuple):
        return None if isinstance(value, shape) else f"{where} must be a string or number, not {_kind(value)}"
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{where} must be a list, not {_kind(value)}"
        for n, item in enumerate(value):
            if (problem := shape_problem(item, shape[0], f"{where}[{n}]")) is not None:
                return problem
        return None
    if not isinstance(value, Mapping):
        return f"{where or 'the object'} must be an object, not {_kind(value)}"
    if str in shape:  # a map: every value alike
        for key, item in value.items():
            if (problem := shape_problem(item, shape[str], f"{where}[{key!r}]")) is not None:
                return problem
        return None
    for name, inner in shape.items():
        if (problem := shape_problem(value.get(name), inner, f"{where}.{name}" if where else name)) is not None:
            return problem
    return None


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, Mapping) else type(value).__name__
