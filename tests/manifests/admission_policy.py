"""A ValidatingAdmissionPolicy evaluated the way the API server does, with cel-python.

matchConditions first (all must hold, or the policy does not apply); then the variables in order, each
seeing the ones before it; then every validation, a false one denying with its message (or its
messageExpression, evaluated). Only standard CEL is available here, so an expression that leans on one
of Kubernetes' CEL libraries fails in these tests rather than passing unchecked.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel

Doc = dict[str, Any]


@dataclass(frozen=True)
class Verdict:
    applies: bool
    denials: tuple[str, ...]

    @property
    def allowed(self) -> bool:
        return not self.denials


def evaluate(policy: Doc, request: Doc, old: Doc, new: Doc) -> Verdict:
    env = celpy.Environment()

    def run(expression: str, activation: dict[str, Any]) -> Any:
        return env.program(env.compile(expression)).evaluate(activation)

    activation: dict[str, Any] = {
        "object": json_to_cel(new),
        "oldObject": json_to_cel(old),
        "request": json_to_cel(request),
    }
    spec = policy["spec"]
    if not all(bool(run(c["expression"], activation)) for c in spec.get("matchConditions", [])):
        return Verdict(applies=False, denials=())
    variables = celtypes.MapType()
    for variable in spec.get("variables", []):
        activation["variables"] = variables
        variables = celtypes.MapType(
            {**variables, celtypes.StringType(variable["name"]): run(variable["expression"], activation)}
        )
    activation["variables"] = variables
    denials = []
    for validation in spec["validations"]:
        if not bool(run(validation["expression"], activation)):
            message = validation.get("message") or str(run(validation["messageExpression"], activation))
            denials.append(message)
    return Verdict(applies=True, denials=tuple(denials))


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, as the API server applies `kubectl patch --type merge` and the agent's patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
