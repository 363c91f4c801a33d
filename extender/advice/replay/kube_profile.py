"""What a KubeSchedulerConfiguration makes kube-scheduler do, as far as the replay's scoring goes.

Parsed from an already-loaded ``kubescheduler.config.k8s.io/v1`` document (YAML is read at the CLI
edge). The rules below are kube-scheduler v1.36's:

- Default plugins (``pkg/scheduler/apis/config/v1/default_plugins.go``) are enabled at MultiPoint;
  those with a Score hook and their weights: TaintToleration 3, NodeAffinity 2, NodeResourcesFit 1,
  PodTopologySpread 2, InterPodAffinity 2, NodeResourcesBalancedAllocation 1, ImageLocality 1
  (VolumeBinding scores only pods with volume claims).
- A profile's ``plugins.multiPoint`` is merged into that list (``mergePluginSet``: ``disabled`` names
  or ``*`` drop defaults; an ``enabled`` default keeps its place with the new weight; others append).
  MultiPoint is then expanded into the Score point unless ``plugins.score.disabled`` names the plugin
  or ``*``; a plugin enabled at ``plugins.score`` as well takes that entry's weight
  (``pkg/scheduler/framework/runtime/framework.go`` ``expandMultiPointPlugins``). A weight of 0 is 1.
- Plugins whose score is the same on every node for the replay's pods (no taints, tolerations,
  affinity, topology constraints, owners, volumes or node images) cannot move the argmax and are
  listed but not scored: TaintToleration (every node 100 after its reverse normalisation),
  NodeAffinity and InterPodAffinity (no preferred terms: skipped), PodTopologySpread (a bare pod has
  no owner for the system default constraints: skipped), ImageLocality (no images listed: 0),
  VolumeBinding (no claims: skipped).
- NodeResourcesFit's ``scoringStrategy`` defaults to LeastAllocated over cpu and memory, weight 1
  each; NodeResourcesBalancedAllocation's ``resources`` default to cpu and memory.
- ``percentageOfNodesToScore``: the profile's value wins over the top-level one (``schedule_one.go``
  ``numFeasibleNodesToFind``); 0 or absent means kube-scheduler's adaptive percentage.
- One extender at most (the advisor): ``weight`` (default 1), ``filterVerb`` / ``prioritizeVerb`` /
  ``bindVerb`` (absent: that call is not made), ``managedResources`` (absent or empty: every pod is
  sent), ``ignorable`` (default false: a failing filter or bind call fails the pod's cycle; true: it is
  skipped, as if the extender did not exist — what an outage of the advisor leads to).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extender.advice.replay.kube_fields import Problems, a_list, mapping, whole
from extender.advice.replay.kube_fit import FitScoring, ResourceWeight, ShapePoint, fit_scoring, resources_of
from extender.advice.replay.openb import ReplayInputError

__all__ = [
    "BALANCED",
    "CONSTANT_ON_BARE_PODS",
    "FIT",
    "ExtenderConfig",
    "FitScoring",
    "KubeSchedulerProfile",
    "ResourceWeight",
    "ShapePoint",
    "kube_default_profile",
    "parse_profile",
]

API_VERSION = "kubescheduler.config.k8s.io/v1"
FIT = "NodeResourcesFit"
BALANCED = "NodeResourcesBalancedAllocation"

# default_plugins.go, in order; None: the plugin has no Score hook (its weight is never read).
_DEFAULT_MULTIPOINT: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    (FIT, 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", None),
    ("DefaultPreemption", None),
    (BALANCED, 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)
CONSTANT_ON_BARE_PODS = frozenset(
    {"TaintToleration", "NodeAffinity", "PodTopologySpread", "InterPodAffinity", "ImageLocality", "VolumeBinding"}
)
_SCORING = CONSTANT_ON_BARE_PODS | {FIT, BALANCED}
_KNOWN = {name for name, _ in _DEFAULT_MULTIPOINT} | _SCORING | {"EBSLimits", "GCEPDLimits", "AzureDiskLimits"}


@dataclass(frozen=True, slots=True)
class ExtenderConfig:
    url: str
    weight: int
    filters: bool
    prioritizes: bool
    managed_resources: frozenset[str]  # empty: every pod is sent
    ignorable: bool = False  # kube-scheduler's default: a failing call fails the cycle
    binds: bool = False  # bindVerb: the extender binds the pods it is interested in


@dataclass(frozen=True, slots=True)
class KubeSchedulerProfile:
    """One profile's scoring: the scored plugins and weights, node sampling, and the extender."""

    name: str
    percentage_of_nodes_to_score: int  # 0: kube-scheduler's adaptive percentage
    score_weights: Mapping[str, int]  # every enabled Score plugin, constant ones included
    fit: FitScoring = FitScoring()  # noqa: RUF009 (frozen: one shared default is safe)
    balanced_resources: tuple[ResourceWeight, ...] = (ResourceWeight("cpu", 1), ResourceWeight("memory", 1))
    extender: ExtenderConfig | None = None

    @property
    def has_scoring(self) -> bool:
        """``schedule_one.go`` ``hasScoring``: without it kube-scheduler stops at the first feasible node."""
        return bool(self.score_weights) or (self.extender is not None and self.extender.prioritizes)

    def weight(self, plugin: str) -> int:
        """The plugin's score weight, 0 when it is not enabled at the Score point."""
        return self.score_weights.get(plugin, 0)

    def describe(self) -> str:
        """One line for the report."""
        scored = ", ".join(f"{n}×{w}" for n, w in self.score_weights.items() if n not in CONSTANT_ON_BARE_PODS)
        sampling = f"{self.percentage_of_nodes_to_score} %" if self.percentage_of_nodes_to_score else "adaptive"
        if self.extender is None:
            ext = "no extender"
        else:
            managed = "all pods" if not self.extender.managed_resources else "pods asking managedResources"
            away = "ignorable" if self.extender.ignorable else "not ignorable"
            ext = f"extender weight {self.extender.weight} ({managed}), {away}"
        return f"profile {self.name}: plugins {scored or 'none'}; nodes scored {sampling}; {ext}"


def _plugins(value: Any, where: str, problems: Problems) -> tuple[list[tuple[str, int | None]], set[str]]:
    """A PluginSet: enabled (name, weight) in order, and the disabled names."""
    pset = mapping(value, where, problems)
    enabled: list[tuple[str, int | None]] = []
    disabled: set[str] = set()
    for key, out in (("enabled", enabled), ("disabled", None)):
        for i, item in enumerate(a_list(pset.get(key), f"{where}.{key}", problems)):
            at = f"{where}.{key}[{i}]"
            entry = mapping(item, at, problems)
            name = entry.get("name")
            if not isinstance(name, str) or not name:
                problems.add(at, "a plugin needs a name")
                continue
            if name != "*" and name not in _KNOWN:
                problems.add(at, f"unknown plugin {name!r}: the replay models kube-scheduler's in-tree plugins only")
                continue
            if out is None:
                disabled.add(name)
            else:
                out.append((name, whole(entry.get("weight"), f"{at}.weight", problems, 0, 100, 0)))
    return enabled, disabled


def _merge(
    defaults: list[tuple[str, int | None]], enabled: list[tuple[str, int | None]], disabled: set[str]
) -> list[tuple[str, int | None]]:
    """``mergePluginSet``: defaults minus disabled (all for ``*``), re-configured in place, then the rest."""
    custom = dict(enabled)
    kept = [] if "*" in disabled else [(n, custom.get(n, w)) for n, w in defaults if n not in disabled]
    named = {n for n, _ in kept}
    return kept + [(n, w) for n, w in enabled if n not in named]


def _score_weights(profile: Mapping[str, Any], where: str, problems: Problems) -> dict[str, int]:
    plugins = mapping(profile.get("plugins"), f"{where}.plugins", problems)
    multi_on, multi_off = _plugins(plugins.get("multiPoint"), f"{where}.plugins.multiPoint", problems)
    score_on, score_off = _plugins(plugins.get("score"), f"{where}.plugins.score", problems)
    multipoint = _merge(list(_DEFAULT_MULTIPOINT), multi_on, multi_off)
    weights: dict[str, int] = {}
    if "*" not in score_off:
        weights = {n: w or 1 for n, w in multipoint if n in _SCORING and w is not None and n not in score_off}
        # A non-scoring default re-enabled at MultiPoint with a weight still scores only if it can.
        weights |= {n: w or 1 for n, w in multi_on if n in _SCORING and n not in score_off}
    for name, weight in score_on:
        if name not in _SCORING:
            problems.add(f"{where}.plugins.score", f"{name} has no Score hook")
            continue
        weights[name] = weight or 1
    return weights


def _plugin_args(profile: Mapping[str, Any], where: str, problems: Problems) -> dict[str, Mapping[str, Any]]:
    out = {}
    for i, item in enumerate(a_list(profile.get("pluginConfig"), f"{where}.pluginConfig", problems)):
        entry = mapping(item, f"{where}.pluginConfig[{i}]", problems)
        name = entry.get("name")
        if isinstance(name, str):
            out[name] = mapping(entry.get("args"), f"{where}.pluginConfig[{i}].args", problems)
    return out


def _extender(document: Mapping[str, Any], problems: Problems) -> ExtenderConfig | None:
    extenders = a_list(document.get("extenders"), "extenders", problems)
    if len(extenders) > 1:
        problems.add("extenders", f"{len(extenders)} given; the replay models one extender, the advisor")
    if not extenders:
        return None
    entry = mapping(extenders[0], "extenders[0]", problems)
    managed = set()
    for i, item in enumerate(a_list(entry.get("managedResources"), "extenders[0].managedResources", problems)):
        name = mapping(item, f"extenders[0].managedResources[{i}]", problems).get("name")
        if not isinstance(name, str) or not name:
            problems.add(f"extenders[0].managedResources[{i}]", "a managed resource needs a name")
        else:
            managed.add(name)
    ignorable = entry.get("ignorable", False)
    if not isinstance(ignorable, bool):
        problems.add("extenders[0].ignorable", f"{ignorable!r} is not true or false")
        ignorable = False
    return ExtenderConfig(
        url=str(entry.get("urlPrefix", "")),
        weight=whole(entry.get("weight"), "extenders[0].weight", problems, 1, None, 1),
        filters=bool(entry.get("filterVerb")),
        prioritizes=bool(entry.get("prioritizeVerb")),
        managed_resources=frozenset(managed),
        ignorable=ignorable,
        binds=bool(entry.get("bindVerb")),
    )


def parse_profile(document: Any, profile_name: str | None = None) -> KubeSchedulerProfile:
    """The scoring of one profile (the first, or the one named) of a KubeSchedulerConfiguration."""
    problems = Problems()
    if not isinstance(document, Mapping):
        raise ReplayInputError("scheduler configuration: expected a KubeSchedulerConfiguration object")
    if document.get("kind") != "KubeSchedulerConfiguration":
        problems.add("kind", f"{document.get('kind')!r} is not KubeSchedulerConfiguration")
    if document.get("apiVersion") != API_VERSION:
        problems.add("apiVersion", f"{document.get('apiVersion')!r} is not {API_VERSION}")
    overall = whole(document.get("percentageOfNodesToScore"), "percentageOfNodesToScore", problems, 0, 100, 0)
    profiles = a_list(document.get("profiles"), "profiles", problems) or [{"schedulerName": "default-scheduler"}]
    names = [str(mapping(p, "profiles[]", problems).get("schedulerName", "default-scheduler")) for p in profiles]
    index = 0
    if profile_name is not None:
        if profile_name not in names:
            problems.add("profiles", f"no profile {profile_name!r} (profiles: {', '.join(names)})")
        else:
            index = names.index(profile_name)
    where = f"profiles[{index}]"
    profile = mapping(profiles[index], where, problems)
    own = profile.get("percentageOfNodesToScore")
    percentage = (
        whole(own, f"{where}.percentageOfNodesToScore", problems, 0, 100, overall) if own is not None else overall
    )
    weights = _score_weights(profile, where, problems)
    args = _plugin_args(profile, where, problems)
    fit = fit_scoring(args.get(FIT, {}), f"{where}.pluginConfig[{FIT}].args", problems)
    balanced = resources_of(args.get(BALANCED, {}).get("resources"), f"{where}.pluginConfig[{BALANCED}]", problems)
    extender = _extender(document, problems)
    problems.raise_any()
    return KubeSchedulerProfile(
        names[index],
        percentage,
        weights,
        fit,
        balanced or (ResourceWeight("cpu", 1), ResourceWeight("memory", 1)),
        extender,
    )


def kube_default_profile() -> KubeSchedulerProfile:
    """kube-scheduler's default profile, with no extender."""
    return parse_profile({"apiVersion": API_VERSION, "kind": "KubeSchedulerConfiguration"})
