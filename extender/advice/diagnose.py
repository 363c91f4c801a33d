"""Why is my GPU pod pending (or slow)? Five steps, in the order that avoids buying GPUs that fix nothing,
after one that comes first when it applies:

0. scheduler   — a share only the advisor counts, on a scheduler that cannot count it (``diagnose_scheduler``):
                 the fix is its schedulerName, not GPUs.
1. allocation  — does any node have enough free ``nvidia.com/gpu`` (MIG slices, or for a share of a GPU
                 free milli on the nodes sharing GPUs its way: ``diagnose_shares``) at all?
2. memory      — the GPUs it would get: is their memory already taken (a leftover process, a tenant
                 that holds VRAM while its SM sits idle)? "5 % SM" can still mean a full device.
3. placement   — nodes that could host it, excluded by its nodeSelector, affinity, taints, or by
                 gpu-advisor's own filter (e.g. an NVLink requirement): each named, with the reason.
4. hold        — the reserve holds the share off the nodes that would take it, for whole-GPU pods
                 likely to need that room (``diagnose_hold``): until when at the latest.
5. application — it runs (or could): is the GPU starved? SM cycling 0 ↔ high is CPU-bound (input
                 pipeline), flat low is I/O-bound or waiting.

The first step that explains it is the answer; the steps before it say what was ruled out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from extender.advice.diagnose_application import IDLE_SM, application_step, sm_pattern
from extender.advice.diagnose_hold import hold_finding
from extender.advice.diagnose_scheduler import scheduler_finding
from extender.advice.diagnose_shares import Judged, share_room
from extender.cluster.selectors import node_admits
from extender.cluster.state import NodeState
from extender.model.gpu_use import UNKNOWN_HOLDER, gpu_use
from extender.model.pods import PodRequest, pod_request
from extender.model.readings import GpuReading, TelemetryBoard
from extender.scoring import ScoringPolicy, judge_all
from extender.scoring.cliques import OUTSIDE
from extender.scoring.holding import Reserve
from extender.scoring.verdict import Verdict
from extender.scoring.workload import NO_MIX, Mix

__all__ = ["Diagnosis", "Step", "diagnose", "sm_pattern"]

StepName = Literal["scheduler", "allocation", "memory", "placement", "hold", "application"]
FULL_MEMORY = 0.9  # VRAM share above which a GPU counts as full


@dataclass(frozen=True)
class Step:
    name: StepName
    explains: bool
    finding: str
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class Diagnosis:
    pod: str
    request: str
    phase: str
    steps: tuple[Step, ...] = field(default_factory=tuple)

    @property
    def answer(self) -> Step | None:
        return next((s for s in self.steps if s.explains), None)

    def to_dict(self) -> dict[str, Any]:
        answer = self.answer
        return {
            "pod": self.pod,
            "request": self.request,
            "phase": self.phase,
            "explained_by": answer.name if answer else None,
            "steps": [
                {"step": s.name, "explains": s.explains, "finding": s.finding, "evidence": list(s.evidence)}
                for s in self.steps
            ],
        }


def _memory_share(reading: GpuReading, fallback_total_mib: int | None) -> float | None:
    total = reading.memory_total_mib or fallback_total_mib
    if reading.memory_used_mib is None or not total:
        return None
    return reading.memory_used_mib / total


def _has_room(node: NodeState, request: PodRequest) -> bool:
    if request.mig:
        return all(node.mig_free(p) >= n for p, n in request.mig)
    return node.free_now >= request.gpus and node.gpu_total >= request.gpus


def _free_text(node: NodeState, request: PodRequest) -> str:
    if request.mig:
        return ", ".join(f"{node.mig_free(p)}/{node.mig_total(p)} MIG {p}" for p, _ in request.mig)
    return f"{node.free_now}/{node.gpu_total}"


def diagnose(
    pod: Mapping[str, Any],
    nodes: Mapping[str, NodeState],
    telemetry: TelemetryBoard | None,
    policy: ScoringPolicy,
    now: float,
    mix: Mix = NO_MIX,
    reserve: Reserve | None = None,
) -> Diagnosis:
    """Allocation → memory → placement → hold → application: the first step that blocks is the answer.
    ``mix`` and ``reserve`` as the dry-run reads them (the learned mix, the reserve's holds), so that
    diagnose and explain give one verdict; a pod asking GPUs through DRA claims comes translated
    (``dra_view.pod_through_claims``)."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    key = f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"
    request = pod_request(pod)
    phase = str((pod.get("status") or {}).get("phase") or ("Running" if spec.get("nodeName") else "Pending"))
    if not request.wants_gpu:
        return Diagnosis(key, "no GPU", phase, (Step("allocation", True, "the pod asks for no GPU"),))
    first = _scheduler_steps(pod)
    running_on = spec.get("nodeName")
    if running_on:
        placed = [Step(name, False, f"placed: the pod is bound to {running_on}") for name in _BEFORE_APPLICATION]
        host = nodes.get(str(running_on))
        if host is not None and host.overcommitted:
            placed[0] = _overcommitted_host(host)
        return Diagnosis(
            key,
            request.describe(),
            phase,
            (*first, *placed, Step("application", *application_step(key, telemetry, running_on))),
        )
    steps: list[Step] = list(first)

    def judged(names: list[str]) -> dict[str, Verdict]:
        return {v.node: v for v in judge_all(request, names, nodes, telemetry, policy, now, mix=mix)}

    roomy = _allocation(request, nodes, telemetry, steps, judged)
    if roomy:
        verdicts = judged([n.name for n in roomy])
        memory_ok = _memory(roomy, verdicts, telemetry, steps)
        if memory_ok and _placement(memory_ok, verdicts, spec, steps):
            fits = [verdicts[n.name] for n in memory_ok if verdicts[n.name].fits and node_admits(n, spec) is None]
            held = reserve(request, pod) if reserve is not None else None
            explains, finding, evidence = hold_finding(request, fits, nodes, held, policy.reserve_hold_limit_s)
            steps.append(Step("hold", explains, finding, evidence))
            if not explains:
                steps.append(Step("application", True, _NOTHING_GPU_RELATED))
    return Diagnosis(key, request.describe(), phase, tuple(steps))


def _scheduler_steps(pod: Mapping[str, Any]) -> tuple[Step, ...]:
    wrong = scheduler_finding(pod)
    return (Step("scheduler", True, *wrong),) if wrong else ()


_BEFORE_APPLICATION: tuple[StepName, ...] = ("allocation", "memory", "placement")
_NOTHING_GPU_RELATED = (
    "nothing GPU-related keeps it pending: read kube-scheduler's events "
    "(CPU, memory, quota, other constraints) with kubectl describe pod"
)


def _overcommitted_host(node: NodeState) -> Step:
    """A bound pod whose node holds more than it has: its GPU is shared past its size (or its count is)."""
    return Step(
        "allocation",
        True,
        f"bound to {node.name}, which is over-committed: its pods hold more GPU than it has, so they "
        "contend for it (bound without gpu-advisor or the sharing scheduler); move pods off it",
        tuple(f"{node.name}: {line}" for line in node.overcommitted),
    )


def _allocation(
    request: PodRequest,
    nodes: Mapping[str, NodeState],
    telemetry: TelemetryBoard | None,
    steps: list[Step],
    judged: Judged,
) -> list[NodeState]:
    """Step 1: the nodes with the pod's GPUs free by allocation counts (none: the step blocks)."""
    gpu_nodes = [n for n in nodes.values() if n.gpu_total or n.mig_profiles()]
    # Only the pod's own vendor's GPUs can be allocated to it: an idle H100 is no room for an amd.com/gpu pod.
    gpu_nodes = [n for n in gpu_nodes if not n.gpu_total or n.gpu_vendor.resource == request.resource]
    if request.share is not None:  # a share of a GPU: free milli where GPUs are shared the pod's way
        roomy, message, free_list = share_room(request, nodes, judged)
    else:
        free_list = tuple(f"{n.name}: {_free_text(n, request)} free" for n in sorted(gpu_nodes, key=lambda n: n.name))
        roomy, message = [n for n in gpu_nodes if _has_room(n, request)], ""
    # Over-committed nodes offer no room whatever their counts say; named so nobody counts on them.
    free_list += tuple(
        f"{n.name}: over-committed ({'; '.join(n.overcommitted)})"
        for n in sorted(nodes.values(), key=lambda n: n.name)
        if n.overcommitted
    )
    if roomy:
        steps.append(Step("allocation", False, f"{len(roomy)} node(s) have {request.describe()} free", free_list))
        return roomy
    idle = _idle_allocated(gpu_nodes, telemetry)
    note = f"; {len(idle)} allocated GPUs sit idle (SM ≤ 10%), see evidence" if idle else ""
    message = (message or f"no node has {request.describe()} free: all allocated") + note
    steps.append(Step("allocation", True, message, free_list + tuple(idle)))
    return []


def _memory(
    roomy: list[NodeState], verdicts: Mapping[str, Verdict], telemetry: TelemetryBoard | None, steps: list[Step]
) -> list[NodeState]:
    """Step 2: of those, the nodes whose GPUs-to-be are not already full of someone's memory."""
    memory_ok: list[NodeState] = []
    taken: list[str] = []
    for node in roomy:
        verdict = verdicts[node.name]
        gpus = verdict.gpus if verdict.gpus is not None else (node.free_gpus or ())
        full = _full_gpus(node, gpus, telemetry)
        taken.extend(full)
        if not full:
            memory_ok.append(node)
    if not memory_ok:
        steps.append(Step("memory", True, "the free GPUs' memory is already taken (see who holds it)", tuple(taken)))
    else:
        steps.append(Step("memory", False, f"{len(memory_ok)} node(s) have free GPUs with free memory", tuple(taken)))
    return memory_ok


def _full_gpus(node: NodeState, gpus: tuple[int, ...], telemetry: TelemetryBoard | None) -> list[str]:
    full = []
    for g in gpus:
        reading = telemetry.reading(node.name, node.topology.gpu(g)) if telemetry and node.topology else None
        if reading is None:
            continue
        share = _memory_share(reading, node.gpu_memory_mib)
        if share is not None and share >= FULL_MEMORY:
            use = gpu_use(g, reading, None)
            full.append(
                f"{node.name} GPU {g}: free by allocation yet {share:.0%} of its memory is in use: {use.state} "
                f"(SM {reading.sm_util or 0:.0f}%) by {use.holder or UNKNOWN_HOLDER}"
            )
    return full


def _placement(
    memory_ok: list[NodeState], verdicts: Mapping[str, Verdict], spec: Mapping[str, Any], steps: list[Step]
) -> bool:
    """Step 3: whether any of those nodes admits the pod (selectors, taints, the advisor's filter)."""
    excluded: list[str] = []
    fitting: list[str] = []
    for node in sorted(memory_ok, key=lambda n: n.name):
        why = node_admits(node, spec)
        if why is None and not verdicts[node.name].fits:
            why = f"gpu-advisor: {verdicts[node.name].reason}"
        if why is None:
            fitting.append(node.name)
        else:
            excluded.append(f"{node.name}: {why}")
    if not fitting:
        finding = _group_finding(memory_ok, verdicts) or f"every node with room is excluded ({len(excluded)})"
        steps.append(Step("placement", True, finding, tuple(excluded)))
        return False
    steps.append(Step("placement", False, f"it fits on {', '.join(fitting)}", tuple(excluded)))
    return True


def _group_finding(nodes: list[NodeState], verdicts: Mapping[str, Verdict]) -> str | None:
    """A pod group held out of every node by its NVLink clique: the one reason the clique term gives."""
    reasons = {
        verdicts[n.name].reason.split(OUTSIDE)[0]
        for n in nodes
        if not verdicts[n.name].fits and "clique" in verdicts[n.name].breakdown
    }
    return f"pod group: {reasons.pop()}" if len(reasons) == 1 else None


def _idle_allocated(nodes: list[NodeState], telemetry: TelemetryBoard | None) -> list[str]:
    if telemetry is None:
        return []
    idle = []
    for node in nodes:
        if node.topology is None:
            continue
        free = set(node.free_gpus or ())
        for gpu in node.topology.gpus:
            reading = telemetry.reading(node.name, gpu)
            if gpu.index in free or reading is None or reading.sm_util is None:
                continue
            if reading.sm_util <= IDLE_SM:
                share = _memory_share(reading, node.gpu_memory_mib)
                held = f", {share:.0%} memory held" if share is not None else ""
                idle.append(f"{node.name} GPU {gpu.index}: allocated, SM {reading.sm_util:.0f}%{held}")
    return idle
