"""CEL as the API server evaluates it for admission, with cel-python: an expression over ``object``, and a
MutatingAdmissionPolicy's match conditions, variables and its one ApplyConfiguration mutation."""

from __future__ import annotations

import copy
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel

Doc = dict[str, Any]
# The one mutation the routing policy makes. cel-python has no Kubernetes object construction
# (``Object{...}``), so the shape is held here and the value it writes is evaluated.
ROUTE = "Object{spec: Object.spec{schedulerName: variables.scheduler}}"


def holds(expression: str, obj: Doc, variables: dict[str, Any] | None = None) -> Any:
    env = celpy.Environment()
    activation: dict[str, Any] = {"object": json_to_cel(obj)}
    if variables is not None:
        activation["variables"] = celtypes.MapType({celtypes.StringType(k): v for k, v in variables.items()})
    value = env.program(env.compile(expression)).evaluate(activation)
    # A condition must come out a bool: an evaluation error (a missing field unguarded by has()) fails here.
    return bool(value) if isinstance(value, celtypes.BoolType) else value


def mutate(policy: Doc, obj: Doc) -> Doc:
    """The object after the policy: unchanged unless every matchCondition holds."""
    spec = policy["spec"]
    if not all(bool(holds(c["expression"], obj)) for c in spec["matchConditions"]):
        return obj
    variables: dict[str, Any] = {}
    for variable in spec.get("variables", []):
        variables[variable["name"]] = holds(variable["expression"], obj, variables)
    (mutation,) = spec["mutations"]
    assert mutation["patchType"] == "ApplyConfiguration"
    assert " ".join(mutation["applyConfiguration"]["expression"].split()) == ROUTE
    out = copy.deepcopy(obj)
    out["spec"]["schedulerName"] = str(variables["scheduler"])
    return out
