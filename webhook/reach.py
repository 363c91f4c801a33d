"""Will kube-scheduler ask the advisor about this pod? If not, nothing stops it over-committing a node.

A pod reaches the advisor when the scheduler it names (``spec.schedulerName``, ``default-scheduler`` when
unset) has an extender pointing at the advisor, and that extender is interested in it. kube-scheduler's
rule (``pkg/scheduler/extender.go``, ``HTTPExtender.IsInterested``): an extender without
``managedResources`` is asked about every pod; one with them only about pods whose containers or
initContainers name one of them under ``resources.requests`` or ``resources.limits`` — the name counts,
whatever its value. A pod asking GPUs by annotation (Alibaba ``alibabacloud.com/gpu-milli``) or through a
DRA claim names no such resource, so an extender with ``managedResources`` never sees it.

:class:`AdvisorReach` is which schedulers call the advisor, read once at start-up from the
KubeSchedulerConfiguration(s) given to ``serve --scheduler-config`` (parsed documents here; the YAML is read
at the edge). In a v1 configuration ``extenders`` apply to every profile, so each profile's
``schedulerName`` gets every extender of its file. An extender is the advisor's when its ``urlPrefix``
path ends in ``/scheduler``, where the advisor serves its verbs, and it has a ``filterVerb``: filtering is
what keeps a node from being over-committed. Without a file: the configuration ``gpu-advisor
scheduler-config`` prints (profile ``gpu-advisor``), whose extender the advisor reads as interested in
every pod, and the ``--route-gpu-pods-to`` scheduler when one is named.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from extender.errors import InputError
from webhook.workload import Finding

__all__ = [
    "DEFAULT_SCHEDULER",
    "REACH_CODE",
    "AdvisorReach",
    "SchedulerConfigError",
    "effective_scheduler",
    "interested",
    "named_resources",
    "reach_finding",
]

DEFAULT_SCHEDULER = "default-scheduler"  # what the API server writes when a pod names none
ADVISOR_PROFILE = "gpu-advisor"  # the profile `gpu-advisor scheduler-config` prints
REACH_CODE = "scheduler-skips-advisor"
_CONFIG_API = "kubescheduler.config.k8s.io/"
_KNOWN_FIRST = ("nvidia.com/gpu", "amd.com/gpu")


class SchedulerConfigError(InputError):
    """A ``--scheduler-config`` file is not a KubeSchedulerConfiguration the advisor can read."""


@dataclass(frozen=True)
class AdvisorReach:
    """scheduler name → the managedResources of each of its extenders that point at the advisor (an empty
    set: that extender is asked about every pod)."""

    schedulers: Mapping[str, tuple[frozenset[str], ...]]

    @classmethod
    def default(cls, route_to: str | None = None) -> AdvisorReach:
        names = dict.fromkeys((ADVISOR_PROFILE, *((route_to,) if route_to else ())))
        return cls({name: (frozenset(),) for name in names})

    @classmethod
    def from_configs(cls, configs: Iterable[tuple[str, Any]]) -> AdvisorReach:
        """From (where, parsed document) pairs; every problem of every document in one error."""
        schedulers: dict[str, tuple[frozenset[str], ...]] = {}
        problems: list[str] = []
        for where, doc in configs:
            found, wrong = _read_config(doc)
            problems += [f"{where}: {p}" for p in wrong]
            if not wrong and not any(found.values()):
                problems.append(f"{where}: no extender with a filterVerb and a urlPrefix ending in /scheduler")
            for name, extenders in found.items():
                schedulers[name] = schedulers.get(name, ()) + extenders
        if problems:
            raise SchedulerConfigError("; ".join(problems))
        return cls({name: extenders for name, extenders in schedulers.items() if extenders})

    def extenders(self, scheduler: str) -> tuple[frozenset[str], ...]:
        return self.schedulers.get(scheduler, ())


def _read_config(doc: Any) -> tuple[dict[str, tuple[frozenset[str], ...]], list[str]]:
    if not isinstance(doc, Mapping):
        return {}, ["not a KubeSchedulerConfiguration object"]
    problems: list[str] = []
    if doc.get("kind") != "KubeSchedulerConfiguration" or not str(doc.get("apiVersion", "")).startswith(_CONFIG_API):
        problems.append(
            f"kind {doc.get('kind')!r}, apiVersion {doc.get('apiVersion')!r}: not a KubeSchedulerConfiguration"
        )
    profiles = doc.get("profiles") or [{}]  # kube-scheduler's default: one profile, default-scheduler
    if not isinstance(profiles, list) or not all(isinstance(p, Mapping) for p in profiles):
        problems.append("profiles must be a list of objects")
        profiles = []
    names = [p.get("schedulerName") or DEFAULT_SCHEDULER for p in profiles]
    problems += [f"profiles[{n}].schedulerName must be a string" for n, s in enumerate(names) if not isinstance(s, str)]
    extenders = doc.get("extenders") or []
    if not isinstance(extenders, list) or not all(isinstance(e, Mapping) for e in extenders):
        problems.append("extenders must be a list of objects")
        extenders = []
    managed: list[frozenset[str]] = []
    for n, extender in enumerate(extenders):
        resources, wrong = _managed(extender, f"extenders[{n}]")
        problems += wrong
        if resources is not None:
            managed.append(resources)
    return {str(name): tuple(managed) for name in names}, problems


def _managed(extender: Mapping[str, Any], where: str) -> tuple[frozenset[str] | None, list[str]]:
    """The extender's managedResources when it is the advisor's filter, else None."""
    url = extender.get("urlPrefix")
    if not isinstance(url, str):
        return None, [f"{where}.urlPrefix must be a string"]
    if not urlsplit(url).path.rstrip("/").endswith("/scheduler") or not extender.get("filterVerb"):
        return None, []
    items = extender.get("managedResources") or []
    if not isinstance(items, list) or not all(isinstance(i, Mapping) and isinstance(i.get("name"), str) for i in items):
        return None, [f"{where}.managedResources must be a list of {{name: RESOURCE}}"]
    return frozenset(str(i["name"]) for i in items), []


def named_resources(spec: Mapping[str, Any]) -> frozenset[str]:
    """Every resource name under requests or limits of the containers and initContainers (IsInterested's
    reading: the name, whatever its value; ephemeral containers and pod-level resources are not read)."""
    names: set[str] = set()
    for key in ("containers", "initContainers"):
        containers = spec.get(key)
        for container in containers if isinstance(containers, list) else ():
            resources = container.get("resources") if isinstance(container, Mapping) else None
            for section in ("requests", "limits"):
                values = resources.get(section) if isinstance(resources, Mapping) else None
                if isinstance(values, Mapping):
                    names.update(str(n) for n in values)
    return frozenset(names)


def interested(managed: frozenset[str], names: frozenset[str]) -> bool:
    """kube-scheduler's IsInterested: no managedResources, or the pod names one of them."""
    return not managed or not managed.isdisjoint(names)


def effective_scheduler(spec: Mapping[str, Any], route_to: str | None) -> str:
    """The scheduler that will place the pod: its own choice, or the route for one that chose none."""
    chosen = spec.get("schedulerName")
    name = chosen if isinstance(chosen, str) and chosen else DEFAULT_SCHEDULER
    return route_to if route_to and name == DEFAULT_SCHEDULER else name


def reach_finding(spec: Mapping[str, Any], reach: AdvisorReach, route_to: str | None) -> Finding | None:
    """An error finding for a GPU pod the advisor will not be asked about; None when it will be."""
    scheduler = effective_scheduler(spec, route_to)
    extenders = reach.extenders(scheduler)
    advisor_schedulers = sorted(reach.schedulers)
    if not extenders:
        target = advisor_schedulers[0] if advisor_schedulers else ADVISOR_PROFILE
        routed = " (or serve --route-gpu-pods-to)" if scheduler == DEFAULT_SCHEDULER else ""
        return Finding(
            REACH_CODE,
            "error",
            f"{scheduler[:40]} never calls gpu-advisor: its GPUs go unchecked, nodes can over-commit",
            f"set spec.schedulerName: {target}{routed}",
        )
    names = named_resources(spec)
    if any(interested(managed, names) for managed in extenders):
        return None
    first = {name: n for n, name in enumerate(_KNOWN_FIRST)}
    narrowest = min(extenders, key=lambda managed: len(managed))
    listed = sorted(narrowest, key=lambda n: (first.get(n, len(first)), n))  # the best-known name first
    shown = listed[0][:40] + (f" +{len(listed) - 1} more" if len(listed) > 1 else "")
    return Finding(
        REACH_CODE,
        "error",
        f"the advisor's extender in {scheduler[:24]} skips pods naming none of {shown}",
        "drop managedResources from the advisor's extender (gpu-advisor scheduler-config prints none)",
    )
