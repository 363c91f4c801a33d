"""Where would this pod go, and why — or why not? The same code paths as the live extender.

First the eligibility kube-scheduler itself applies (nodeSelector, required node affinity, taints and
tolerations, cordons), then the extender's own filter and score (``scoring.judge_all``) on the nodes
left: the ranking here is exactly what ``/scheduler/filter`` + ``/scheduler/prioritize`` answer for the
same pod and state, with the nodes the reserve holds a share off (``scoring.holding``) listed as held,
with until when. Admission findings come from a function passed in (the webhook's rules), so this
module does not depend on the webhook package.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from extender.cluster.selectors import node_admits
from extender.cluster.state import NodeState
from extender.errors import InputError
from extender.model.pods import PodRequest, PodSpecError, pod_request, pod_template
from extender.model.readings import TelemetryBoard
from extender.scoring import ScoringPolicy, VerdictMemo, judge_all
from extender.scoring.hold_clock import until_text
from extender.scoring.holding import Holding, Reserve
from extender.scoring.workload import NO_MIX, Mix

__all__ = ["Advise", "DryRunAnswer", "DryRunError", "dry_run"]

# (kind, name, namespace, pod template, request, nodes) → findings as dicts {code, severity, message, advice}
Advise = Callable[[str, str, str, Mapping[str, Any], PodRequest, Iterable[NodeState]], list[dict[str, str]]]


class DryRunError(InputError):
    """The manifest cannot be judged; the message says why."""


class RankedNode(BaseModel):
    node: str
    score: int = Field(ge=0, le=10, description="0–10, as /scheduler/prioritize answers")
    gpus: list[int] | None = Field(description="the GPU set the node would hand the pod (None: not known)")
    reason: str
    breakdown: dict[str, float]


class FilteredNode(BaseModel):
    node: str
    stage: Literal["eligibility", "gpu", "held"] = Field(
        description="eligibility: kube-scheduler's own selectors and taints; gpu: gpu-advisor's filter; "
        "held: the reserve holds the share off it for whole-GPU pods (it waits)"
    )
    reason: str
    unresolvable: bool = False
    held_until: str | None = Field(None, description="held: when the hold ends at the latest (its limit), UTC")


class FindingOut(BaseModel):
    code: str
    severity: str
    message: str
    advice: str


class DryRunAnswer(BaseModel):
    pod: str = Field(description="kind/namespace/name of what was judged")
    request: str = Field(description="what its pods ask of GPUs")
    schedulable: bool
    verdict: str = Field(description="one line: where it would go, or why it cannot")
    ranked: list[RankedNode]
    filtered: list[FilteredNode]
    findings: list[FindingOut]


def _best_label(reason: str) -> str:
    head = reason.split(";", 1)[0]
    return head.split(" (", 1)[0]


def dry_run(
    manifest: Mapping[str, Any],
    nodes: Mapping[str, NodeState],
    telemetry: TelemetryBoard | None,
    policy: ScoringPolicy,
    now: float,
    memo: VerdictMemo | None = None,
    advise: Advise | None = None,
    mix: Mix = NO_MIX,
    reserve: Reserve | None = None,
) -> DryRunAnswer:
    """Where the manifest's pods would go, and why every other node would not take them. ``reserve``:
    how the reserve holds the pod (None: no holds), asked with the manifest when it is a Pod (its
    status says since when it waits), else as a new pod."""
    kind, name, namespace, template = _workload(manifest)
    try:
        request = pod_request(template)
    except PodSpecError as exc:
        raise DryRunError(str(exc)) from None
    label = f"{kind}/{namespace}/{name}"
    advice = advise(kind, name, namespace, template, request, nodes.values()) if advise else []
    findings = [FindingOut(**f) for f in advice]
    if not request.wants_gpu:
        verdict = "asks for no GPU: gpu-advisor has no say in where it goes"
        return DryRunAnswer(
            pod=label,
            request=request.describe(),
            schedulable=True,
            verdict=verdict,
            ranked=[],
            filtered=[],
            findings=findings,
        )
    held = reserve(request, manifest if kind == "Pod" else None) if reserve is not None else None
    spec = template.get("spec") or {}
    ranked, filtered = _judged(request, spec, nodes, telemetry, policy, now, memo, mix, held)
    return DryRunAnswer(
        pod=label,
        request=request.describe(),
        schedulable=bool(ranked),
        verdict=_summary(ranked, filtered),
        ranked=ranked,
        filtered=filtered,
        findings=findings,
    )


def _workload(manifest: Mapping[str, Any]) -> tuple[str, str, str, Mapping[str, Any]]:
    """(kind, name, namespace, pod template) of a Pod or workload manifest."""
    if not isinstance(manifest, Mapping) or not manifest.get("kind"):
        raise DryRunError(
            "the manifest needs a 'kind' (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob)"
        )
    template = pod_template(manifest)
    if template is None:
        raise DryRunError(f"kind {manifest.get('kind')!r} has no pod template to judge")
    meta = manifest.get("metadata") or {}
    return str(manifest["kind"]), str(meta.get("name", "")), str(meta.get("namespace", "default")), template


def _judged(
    request: PodRequest,
    spec: Mapping[str, Any],
    nodes: Mapping[str, NodeState],
    telemetry: TelemetryBoard | None,
    policy: ScoringPolicy,
    now: float,
    memo: VerdictMemo | None,
    mix: Mix,
    held: Holding | None = None,
) -> tuple[list[RankedNode], list[FilteredNode]]:
    """Eligibility (selectors, taints) first, then the advisor's filter and score, best first."""
    filtered: list[FilteredNode] = []
    eligible: list[str] = []
    for node_name in sorted(nodes):
        why = node_admits(nodes[node_name], spec)
        if why is None:
            eligible.append(node_name)
        else:
            filtered.append(FilteredNode(node=node_name, stage="eligibility", reason=why, unresolvable=True))
    ranked: list[RankedNode] = []
    verdicts = judge_all(request, eligible, nodes, telemetry, policy, now, memo, mix=mix)
    before = {v.node: v for v in verdicts}
    verdicts = held.apply(request, verdicts, nodes)[0] if held is not None else verdicts
    for v in verdicts:
        if held is not None and before[v.node].fits and not v.fits:
            until = until_text(held.until)
            reason = f"{v.reason} (until {until} at the latest: the hold limit)"
            filtered.append(FilteredNode(node=v.node, stage="held", reason=reason, held_until=until))
        elif v.fits:
            gpus = list(v.gpus) if v.gpus is not None else None
            breakdown = dict(v.breakdown)
            ranked.append(RankedNode(node=v.node, score=v.score, gpus=gpus, reason=v.reason, breakdown=breakdown))
        else:
            filtered.append(FilteredNode(node=v.node, stage="gpu", reason=v.reason, unresolvable=v.unresolvable))
    ranked.sort(key=lambda r: (-r.score, r.node))
    return ranked, filtered


def _summary(ranked: list[RankedNode], filtered: list[FilteredNode]) -> str:
    if ranked:
        best = ranked[0]
        count = f"{len(ranked)} node{'s' if len(ranked) != 1 else ''}"
        return f"schedulable on {count}; best: {best.node} with " + _best_label(best.reason)
    held = [f for f in filtered if f.stage == "held"]
    if held:  # the hold is why it waits: said first, whatever else refused it elsewhere
        names = ", ".join(f.node for f in held[:3]) + (f" +{len(held) - 3} more" if len(held) > 3 else "")
        return f"unschedulable: {names}: {held[0].reason}"
    judged = [f for f in filtered if f.stage == "gpu"] or filtered
    return "unschedulable: " + (_by_node(judged) or "no nodes")


def _by_node(filtered: list[FilteredNode], groups: int = 4, names: int = 3) -> str:
    """``h100-a, h100-b: has 8 GPUs in all, pod needs 100; a100-mig-a: has no nvidia.com/gpu``: each
    reason once, after the nodes it holds for, the reasons holding for most nodes first."""
    nodes: dict[str, list[str]] = {}
    for f in filtered:
        nodes.setdefault(f.reason, []).append(f.node)
    order = sorted(nodes.items(), key=lambda item: (-len(item[1]), item[0]))
    parts = []
    for reason, where in order[:groups]:
        shown = ", ".join(sorted(where)[:names]) + (f" +{len(where) - names} more" if len(where) > names else "")
        parts.append(f"{shown}: {reason}")
    return "; ".join(parts) + (" …" if len(order) > groups else "")
