"""The shape of the parts of a Pod or Node that gpu-advisor reads, checked once where an object comes in.

The API server never hands out a Pod whose ``metadata`` is a string or whose ``nodeSelector`` is a
list, but a body sent to the extender, the webhook or the dry-run can hold anything. The readers
(``pods``, ``cluster.selectors``, ``cluster.state``) are written for Kubernetes' own types; rather than
guard every ``.get`` in them, an object is checked against the shape of the fields they read, and
refused with the path of the first field that does not fit.

A shape is a type tuple (a scalar), :class:`Integer` (a whole number in a range), ``[shape]`` (a list of
them), ``{name: shape}`` (an object with those fields, others ignored) or ``{str: shape}`` (a map whose
every value has that shape). ``null`` fits every shape: Kubernetes leaves empty fields out or sends them
as null. Scalars where Kubernetes has strings accept numbers and booleans too, as a hand-written YAML
manifest has them (``gpu: 1``); the readers turn them into strings.

``POD_SHAPE`` holds what the scheduler's readers take for granted; ``ADVICE_SHAPE`` adds what the
admission rules read besides (the containers' command, args, env and image, the pod's priority), so one
check at the webhook's door covers every field a rule touches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ADVICE_SHAPE", "NODE_SHAPE", "POD_SHAPE", "Integer", "Shape", "shape_problem"]

Shape = Any  # tuple[type, ...] | list[Shape] | dict[str | type[str], Shape]


@dataclass(frozen=True)
class Integer:
    """A whole number from ``low`` to ``high``: where Kubernetes has an int32, ``"high"``, ``1e308`` and
    ``10**400`` are as wrong as an object."""

    low: int
    high: int


SCALAR: tuple[type, ...] = (str, int, float, bool)
INT32 = Integer(-(2**31), 2**31 - 1)
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
_ADVICE_CONTAINER: Shape = {
    **_CONTAINER,
    "image": SCALAR,
    "command": [SCALAR],
    "args": [SCALAR],
    "env": [{"name": SCALAR, "value": SCALAR}],
}
ADVICE_SHAPE: Shape = {
    **POD_SHAPE,
    "spec": {
        **POD_SHAPE["spec"],
        "containers": [_ADVICE_CONTAINER],
        "initContainers": [_ADVICE_CONTAINER],
        "priority": INT32,
        "priorityClassName": SCALAR,
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
    if isinstance(shape, Integer):
        whole = isinstance(value, int) and not isinstance(value, bool)
        if whole and shape.low <= value <= shape.high:
            return None
        return f"{where} must be a whole number from {shape.low} to {shape.high}, not {_shown(value)}"
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


def _shown(value: Any) -> str:
    """A scalar as written, cut short, anything else by its kind (``str()`` of a 5,000-digit int raises)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return _kind(value)
    if isinstance(value, int) and abs(value) >= 10**21:
        return "a number of more than 21 digits"
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 24 else text[:21] + "..."


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
