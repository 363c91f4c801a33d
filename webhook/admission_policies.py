"""The admission policies that keep GPU pods on a scheduler that can count them, decided inside the API
server so they hold while the advisor is down; and the webhooks' match conditions. All from one table
(``extender.model.gpu_conventions``); ``gpu-advisor admission-policies`` prints them as YAML
(``manifests/routing/policies.yaml``, the Helm chart's ``files/routing-policies.yaml``).

- **Routing** (MutatingAdmissionPolicy): a Pod CREATE that asks a GPU in any convention and chose no
  scheduler gets ``spec.schedulerName`` = the advisor's profile. The API server defaults schedulerName to
  ``default-scheduler`` while decoding, before any admission, so that value means "none chosen"; a pod that
  wants the default scheduler for real opts out with the label. Opt-outs: the label
  ``gpu-advisor.io/routing: "off"`` on the namespace or on the pod. ``failurePolicy: Ignore``: a routing
  error admits the pod unrouted, and the safety net below still catches what only the advisor counts.
- **Safety net** (ValidatingAdmissionPolicy): a Pod CREATE asking a share only the advisor counts (Alibaba
  annotations, HAMi memory or cores, Aliyun memory) on a scheduler outside a list is refused, the message
  naming the fix. Validation runs after every mutation, so a routed pod passes. ``failurePolicy: Fail``:
  the check runs in the API server, and letting such a pod through over-commits a GPU silently.

What varies per install is in CEL variables written as JSON literals (valid CEL): the profile
(``scheduler``) and the schedulers that can count shares (``schedulers``), which the chart sets from values.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from extender.model.gpu_conventions import (
    ADVISOR_PROFILE,
    COUNTING_SCHEDULERS,
    POD_OR_TEMPLATE,
    cel_asks,
    cel_chose_no_scheduler,
)

__all__ = [
    "ADVISOR_PROFILE",
    "COUNTING_SCHEDULERS",
    "EXCLUDED_NAMESPACES",
    "ROUTING_LABEL",
    "ROUTING_POLICY",
    "SAFETY_NET",
    "cel_literal",
    "policies",
    "routing_policy",
    "safety_net",
    "webhook_match_conditions",
]

ROUTING_LABEL = "gpu-advisor.io/routing"  # "off" on a namespace or a pod: never routed
EXCLUDED_NAMESPACES = ("kube-system", "gpu-advisor")  # as the webhooks: the control plane and the advisor's own
ROUTING_POLICY = "gpu-advisor-routing"
SAFETY_NET = "gpu-advisor-safety-net"
_API = "admissionregistration.k8s.io/v1"
_POD_CREATE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}

Doc = dict[str, Any]


def cel_literal(value: str | Sequence[str]) -> str:
    """A string or a list of strings as CEL, written as compact JSON (what Helm's ``toJson`` writes)."""
    return json.dumps(value if isinstance(value, str) else list(value), separators=(",", ":"))


def _not_excluded(namespaces: Sequence[str]) -> Doc:
    return {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(namespaces)}


def _not_off(label: str) -> Doc:
    return {"key": label, "operator": "NotIn", "values": ["off"]}


def _doc(kind: str, name: str, spec: Doc) -> Doc:
    return {"apiVersion": _API, "kind": kind, "metadata": {"name": name}, "spec": spec}


def routing_policy(
    scheduler: str = ADVISOR_PROFILE, label: str = ROUTING_LABEL, excluded: Sequence[str] = EXCLUDED_NAMESPACES
) -> list[Doc]:
    spec = {
        "failurePolicy": "Ignore",
        "reinvocationPolicy": "IfNeeded",  # once routed, chose-no-scheduler is false: a second call does nothing
        "matchConstraints": {
            "resourceRules": [_POD_CREATE],  # schedulerName is immutable after CREATE
            "namespaceSelector": {"matchExpressions": [_not_excluded(excluded), _not_off(label)]},
            "objectSelector": {"matchExpressions": [_not_off(label)]},
        },
        "matchConditions": [
            {"name": "chose-no-scheduler", "expression": cel_chose_no_scheduler()},
            {"name": "asks-for-gpus", "expression": cel_asks("object.spec", "object.metadata")},
        ],
        "variables": [{"name": "scheduler", "expression": cel_literal(scheduler)}],
        "mutations": [
            {
                "patchType": "ApplyConfiguration",
                "applyConfiguration": {"expression": "Object{spec: Object.spec{schedulerName: variables.scheduler}}"},
            }
        ],
    }
    binding = {"policyName": ROUTING_POLICY}
    return [
        _doc("MutatingAdmissionPolicy", ROUTING_POLICY, spec),
        _doc("MutatingAdmissionPolicyBinding", ROUTING_POLICY, binding),
    ]


_SCHEDULER = (
    "has(object.spec.schedulerName) && object.spec.schedulerName != ''"
    " ? object.spec.schedulerName : 'default-scheduler'"
)
_MESSAGE = """\
'this pod asks a GPU share kube-scheduler does not count' +
' (alibabacloud.com/gpu-milli, nvidia.com/gpumem or gpucores, aliyun.com/gpu-mem),' +
' and its scheduler ' + variables.scheduler + ' is not one that does, so the GPU would be over-committed:' +
' set spec.schedulerName: ' + variables.schedulers[0] + ', or drop the label gpu-advisor.io/routing=off' +
' from the pod or its namespace to have it routed there'"""


def safety_net(
    schedulers: Sequence[str] = COUNTING_SCHEDULERS,
    actions: Sequence[str] = ("Deny",),
    excluded: Sequence[str] = EXCLUDED_NAMESPACES,
) -> list[Doc]:
    """The first of ``schedulers`` is the one the refusal names (the chart puts its routing profile first)."""
    spec = {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [_POD_CREATE],
            "namespaceSelector": {"matchExpressions": [_not_excluded(excluded)]},
        },
        "matchConditions": [
            {"name": "asks-for-shares-only-the-advisor-counts", "expression": cel_asks(
                "object.spec", "object.metadata", advisor_only=True)},
        ],
        "variables": [
            {"name": "schedulers", "expression": cel_literal(schedulers)},
            {"name": "scheduler", "expression": _SCHEDULER},
        ],
        "validations": [
            {"expression": "variables.scheduler in variables.schedulers", "messageExpression": _MESSAGE,
             "reason": "Forbidden"},
        ],
    }  # fmt: skip
    binding = {"policyName": SAFETY_NET, "validationActions": list(actions)}
    return [
        _doc("ValidatingAdmissionPolicy", SAFETY_NET, spec),
        _doc("ValidatingAdmissionPolicyBinding", SAFETY_NET, binding),
    ]


def policies() -> list[Doc]:
    """Routing and the safety net with their defaults: ``manifests/routing/policies.yaml``."""
    return [*routing_policy(), *safety_net()]


def webhook_match_conditions() -> list[Doc]:
    """Every webhook's matchConditions: objects whose pods ask a GPU in any convention (a Pod, or a workload's
    pod template), so the webhooks' warnings reach every convention and nothing else is sent."""
    return [{"name": "asks-for-gpus", "expression": cel_asks(*POD_OR_TEMPLATE)}]
