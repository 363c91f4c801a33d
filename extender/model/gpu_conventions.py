"""What makes a pod a GPU pod, in which convention, and whether kube-scheduler can count it: one table, read
by Python (``asked_conventions``) and turned into the CEL the API server evaluates (``cel_asks``).

The API server decides routing and the safety net itself (a MutatingAdmissionPolicy and a
ValidatingAdmissionPolicy), so they hold while the advisor is down; the webhook configurations' match
conditions decide which objects the advisor's webhooks see at all. All three read the pod as CEL can: its
containers' resource names (limits or requests, app and init containers: kube-scheduler's ``IsInterested``
reads the name whatever its value), its annotations, and whether it has ``spec.resourceClaims``. Python
reads the same, so a table test can hold the two to one answer.

Conventions, in the order a resource name is matched (the first that lists it wins):

=============  =====================================================  ==========================
convention     what the pod writes                                    counted by kube-scheduler
=============  =====================================================  ==========================
hami           ``nvidia.com/gpumem``, ``gpumem-percentage``, ``gpucores``  no: only the advisor
aliyun         ``aliyun.com/gpu-mem``                                 no: only the advisor
alibaba        annotations ``alibabacloud.com/gpu-milli``, ``gpu-count`` no: only the advisor
nvidia-mig     ``nvidia.com/mig-*``                                   yes
nvidia         any other ``nvidia.com/*`` (``nvidia.com/gpu``)        yes
amd            ``amd.com/*`` (``amd.com/gpu``, partitions ``cpx_nps4``) yes
dra            a non-empty ``spec.resourceClaims``                    yes (its DRA plugin)
=============  =====================================================  ==========================

An Alibaba annotation whose value is empty or ``0`` asks nothing (``gpu_share`` reads a CPU-only pod so).
DRA: CEL sees the claim's name, never its DeviceClass (the claim is another object), so every pod with
claims counts as a GPU pod here; the advisor's profile passes a pod that turns out to want no GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extender.model.gpu_share import ALIBABA_COUNT, ALIBABA_MILLI, ALIYUN_MEMORY, HAMI_SHARE_FIELDS
from extender.model.pods import MIG_PREFIX

__all__ = [
    "ADVISOR_PROFILE",
    "CONVENTIONS",
    "COUNTING_SCHEDULERS",
    "DEFAULT_SCHEDULER",
    "POD_OR_TEMPLATE",
    "Convention",
    "advisor_only",
    "asked_conventions",
    "cel_asks",
    "cel_chose_no_scheduler",
    "chose_no_scheduler",
    "is_gpu_pod",
    "scheduler_of",
]

DEFAULT_SCHEDULER = "default-scheduler"  # what the API server writes into a pod that names none
ADVISOR_PROFILE = "gpu-advisor"  # the profile `gpu-advisor scheduler-config` prints
# Schedulers that count an annotation or memory share: the advisor's profile, and HAMi's own (its webhook
# writes this name into the pods whose shares it counts).
COUNTING_SCHEDULERS = (ADVISOR_PROFILE, "hami-scheduler")
_NOTHING = ("", "0")  # an annotation share of these values asks no GPU


@dataclass(frozen=True)
class Convention:
    name: str
    counted_by_kube_scheduler: bool  # False: only the advisor (or the convention's own scheduler) counts it
    resources: tuple[str, ...] = ()  # extended resource names, exactly
    prefixes: tuple[str, ...] = ()  # extended resource names starting so
    annotations: tuple[str, ...] = ()  # pod annotation keys
    claims: bool = False  # asks through spec.resourceClaims (DRA)

    def names(self, resource: str) -> bool:
        return resource in self.resources or resource.startswith(self.prefixes)


CONVENTIONS = (
    Convention("hami", False, resources=HAMI_SHARE_FIELDS),
    Convention("aliyun", False, resources=(ALIYUN_MEMORY,)),
    Convention("alibaba", False, annotations=(ALIBABA_MILLI, ALIBABA_COUNT)),
    Convention("nvidia-mig", True, prefixes=(MIG_PREFIX,)),
    Convention("nvidia", True, prefixes=("nvidia.com/",)),
    Convention("amd", True, prefixes=("amd.com/",)),
    Convention("dra", True, claims=True),
)
_ADVISOR_ONLY = tuple(c for c in CONVENTIONS if not c.counted_by_kube_scheduler)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _resource_names(spec: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for key in ("containers", "initContainers"):
        items = spec.get(key)
        for container in items if isinstance(items, list) else ():
            resources = _mapping(_mapping(container).get("resources"))
            for section in ("limits", "requests"):
                names.update(str(n) for n in _mapping(resources.get(section)))
    return names


def asked_conventions(pod: Mapping[str, Any]) -> tuple[str, ...]:
    """The conventions a Pod (or a pod template: ``metadata`` and ``spec``) asks GPUs in, in table order."""
    spec, notes = _mapping(pod.get("spec")), _mapping(_mapping(pod.get("metadata")).get("annotations"))
    asked: set[str] = set()
    for resource in _resource_names(spec):
        first = next((c for c in CONVENTIONS if c.names(resource)), None)  # nvidia.com/gpumem is HAMi's
        asked.update([first.name] if first else [])
    asked.update(c.name for c in CONVENTIONS if any(str(notes.get(a, "")) not in _NOTHING for a in c.annotations))
    if isinstance(spec.get("resourceClaims"), list) and spec["resourceClaims"]:
        asked.add("dra")
    return tuple(c.name for c in CONVENTIONS if c.name in asked)


def is_gpu_pod(pod: Mapping[str, Any]) -> bool:
    return bool(asked_conventions(pod))


def advisor_only(pod: Mapping[str, Any]) -> bool:
    """True when the pod asks a GPU share kube-scheduler cannot count (HAMi, Aliyun, Alibaba)."""
    return any(c.name in asked_conventions(pod) for c in _ADVISOR_ONLY)


def scheduler_of(pod: Mapping[str, Any]) -> str:
    """The scheduler that places the pod: its schedulerName, or the default one."""
    return str(_mapping(pod.get("spec")).get("schedulerName") or DEFAULT_SCHEDULER)


def chose_no_scheduler(pod: Mapping[str, Any]) -> bool:
    """No schedulerName, or the one the API server defaults it to (admission sees the defaulted pod)."""
    return _mapping(pod.get("spec")).get("schedulerName") in (None, "", DEFAULT_SCHEDULER)


def _cel_list(items: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{i}'" for i in items) + "]"


def _cel_name(key: str, conventions: tuple[Convention, ...]) -> str:
    """CEL: the resource name ``key`` belongs to one of ``conventions``."""
    prefixes = tuple(p for c in conventions for p in c.prefixes)
    # What a shorter prefix covers adds nothing: nvidia.com/ covers nvidia.com/mig- and nvidia.com/gpumem.
    prefixes = tuple(p for p in prefixes if not any(p != q and p.startswith(q) for q in prefixes))
    exact = tuple(r for c in conventions for r in c.resources if not r.startswith(prefixes))
    tests = [f"{key} in {_cel_list(exact)}"] if exact else []
    tests += [f"{key}.startsWith('{p}')" for p in prefixes]
    return " || ".join(tests)


def cel_asks(spec: str, meta: str, *, advisor_only: bool = False) -> str:
    """CEL that is true when the pod at ``spec``/``meta`` (CEL paths, e.g. ``object.spec``) asks a GPU in any
    convention, or with ``advisor_only`` in one that only the advisor counts. One clause a line."""
    conventions = _ADVISOR_ONLY if advisor_only else CONVENTIONS
    clauses: list[str] = []
    name = _cel_name("k", conventions)
    if name:
        containers = f"({spec}.containers + ({f'has({spec}.initContainers)'} ? {spec}.initContainers : []))"
        sections = " || ".join(
            f"(has(c.resources.{s}) && c.resources.{s}.exists(k, {name}))" for s in ("limits", "requests")
        )
        clauses.append(f"{containers}.exists(c, has(c.resources) && ({sections}))")
    annotations = tuple(a for c in conventions for a in c.annotations)
    if annotations:
        notes = f"{meta}.annotations"
        clauses.append(
            f"(has({meta}) && has({notes}) && {_cel_list(annotations)}"
            f".exists(a, a in {notes} && !({notes}[a] in {_cel_list(_NOTHING)})))"
        )
    if any(c.claims for c in conventions):
        clauses.append(f"(has({spec}.resourceClaims) && size({spec}.resourceClaims) > 0)")
    return "\n|| ".join(clauses)


def cel_chose_no_scheduler(spec: str = "object.spec") -> str:
    return f"!has({spec}.schedulerName) || {spec}.schedulerName in ['', '{DEFAULT_SCHEDULER}']"


# A Pod, or the pod template of a workload (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob), as
# the webhooks' match conditions see it: (spec, metadata) CEL paths for ``cel_asks``.
_TEMPLATE = (
    "(object.kind == 'Pod' ? object : "
    "(object.kind == 'CronJob' ? object.spec.jobTemplate.spec.template : object.spec.template))"
)
POD_OR_TEMPLATE = (f"{_TEMPLATE}.spec", f"{_TEMPLATE}.metadata")
