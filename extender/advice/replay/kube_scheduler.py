"""The replay with kube-scheduler in the loop: what a scheduler configuration makes of the advisor's advice.

The plain replay assumes the advisor's pick always wins. Here each arriving pod goes through
kube-scheduler v1.36's scheduling cycle as ``pkg/scheduler/schedule_one.go`` runs it, for one profile
(``kube_profile``):

1. Sampling: from the node after the last one examined (``nextStartNodeIndex``), nodes are walked in
   list order through kube-scheduler's own filter until ``numFeasibleNodesToFind`` feasible nodes are
   found (1 when nothing scores); the start index then moves past every node examined.
   kube-scheduler's filter sees CPU, memory and the pod count only: the replay's pods ask for GPUs
   in the Alibaba GPU-share convention (``advisor_policy.replay_pod_object``), through annotations
   that no plugin reads.
2. The extender, when the pod reaches it (``IsInterested``: managedResources): its filter keeps the
   nodes the advisor's verdict admits; its prioritize gives the advisor's 0–10 wire scores, as the
   live extender sends them (``ranking.on_the_wire`` over the nodes sent: one node on top, ``tie_order``).
3. Scores: a single feasible node is taken as is. Otherwise each node totals every enabled plugin's
   score × its weight (NodeResourcesFit's strategy, NodeResourcesBalancedAllocation; the plugins
   that are constant for bare pods are left out, they cannot move the argmax) plus extender weight ×
   10 × wire score; the highest total wins, equal totals by a uniform draw from a generator seeded
   with the run's seed (``selectHost`` draws with its own generator; the distribution is the same).

A GPU pod that does not reach the extender is placed by kube-scheduler's plugins alone, blind to its
GPU share. If the chosen node has the GPUs it asks free (and a model its ``gpu_spec`` admits), the
pod takes them as the replay would (a share on the least-free GPU that fits), and counts as
allocated. Otherwise the pod runs on GPUs that are already taken (over-committed): its CPU and
memory are taken, no GPU milli is, and its GPU request is **not** counted as allocated (it adds to
arrived demand only, like a dropped pod); the report counts such pods and the nodes holding them.
A pod no sampled node takes is dropped (no queue, no retry), as in the plain replay.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from extender.advice.replay.advisor_policy import AdvisorPolicy, replay_pod_object
from extender.advice.replay.engine import RunResult
from extender.advice.replay.fragmentation import FragModel
from extender.advice.replay.kube_profile import BALANCED, FIT, KubeSchedulerProfile
from extender.advice.replay.kube_scores import (
    balanced_allocation,
    extender_points,
    is_interested,
    least_allocated,
    most_allocated,
    num_feasible_nodes_to_find,
    requested_to_capacity_ratio,
)
from extender.advice.replay.nodes import NodeState, best_fit_gpu, fits, initial_state, place
from extender.advice.replay.scorer import RunContext
from extender.advice.replay.specs import MILLI, ArrivalOrder, NodeSpec, Pod, PodShape
from extender.advice.replay.workload import typical_pods
from extender.scoring.ranking import on_the_wire
from extender.scoring.verdict import Verdict

__all__ = ["MIB", "NODE_POD_LIMIT", "KubeRunResult", "kube_replay"]

MIB = 1024 * 1024
NODE_POD_LIMIT = 1000  # the ``pods`` capacity ``replay_node_object`` gives every node
_MEMO_LIMIT = 400_000


@dataclass(frozen=True, slots=True)
class KubeRunResult:
    """One run, and what kube-scheduler did that the advisor did not choose."""

    run: RunResult
    without_advisor: int  # GPU pods placed without the extender being asked
    overcommitted_pods: int  # of those, pods whose node had not the GPUs they ask free
    overcommitted_nodes: int  # nodes holding at least one over-committed pod
    sampled: int  # feasible nodes kube-scheduler stops at (numFeasibleNodesToFind)
    off_best: int = 0  # GPU pods the advisor was asked about, bound where its wire score was not the top


@dataclass(slots=True)
class _KubeNode:
    """A node as kube-scheduler's cache holds it: allocatable and what its pods request."""

    cpu: int  # allocatable milli-CPU
    memory: int  # allocatable bytes
    cpu_requested: int = 0
    memory_requested: int = 0
    pods: int = 0

    def admits(self, cpu: int, memory: int) -> bool:
        """NodeResourcesFit's filter on cpu and memory, and the pod count."""
        return (
            self.pods + 1 <= NODE_POD_LIMIT
            and self.cpu_requested + cpu <= self.cpu
            and self.memory_requested + memory <= self.memory
        )


def _requests(shape: PodShape) -> tuple[int, int]:
    # Replay pods state both requests (``replay_pod_object``), so kube-scheduler's non-zero defaults
    # for unstated requests (``kube_scores.nonzero_request``) never apply: requested == non-zero requested.
    return shape.cpu_milli, shape.memory_mib * MIB


def plugin_total(profile: KubeSchedulerProfile, node: _KubeNode, cpu: int, memory: int) -> int:
    """Σ weight × score over NodeResourcesFit and NodeResourcesBalancedAllocation for this pod."""
    total = 0
    fit_weight = profile.weight(FIT)
    if fit_weight:
        fit = profile.fit
        requested = [_requested(node, r.name, cpu, memory) for r in fit.resources]
        allocatable = [_allocatable(node, r.name) for r in fit.resources]
        weights = [r.weight for r in fit.resources]
        if fit.strategy == "LeastAllocated":
            score = least_allocated(requested, allocatable, weights)
        elif fit.strategy == "MostAllocated":
            score = most_allocated(requested, allocatable, weights)
        else:
            score = requested_to_capacity_ratio(requested, allocatable, weights, fit.shape)
        total += fit_weight * score
    balanced_weight = profile.weight(BALANCED)
    if balanced_weight and (cpu or memory):  # a pod requesting nothing is skipped (best effort)
        names = [r.name for r in profile.balanced_resources]
        requested = [_requested(node, n, cpu, memory) for n in names]
        total += balanced_weight * balanced_allocation(requested, [_allocatable(node, n) for n in names])
    return total


def _requested(node: _KubeNode, resource: str, cpu: int, memory: int) -> int:
    if resource == "cpu":
        return node.cpu_requested + cpu
    if resource == "memory":
        return node.memory_requested + memory
    return 0  # replay pods request no other resource: left out of the score (allocatable 0 below)


def _allocatable(node: _KubeNode, resource: str) -> int:
    return node.cpu if resource == "cpu" else node.memory if resource == "memory" else 0


class _Advisor:
    """The advisor's verdicts, named after the nodes, remembered per (node state, pod shape)."""

    def __init__(self, policy: AdvisorPolicy) -> None:
        self.policy = policy
        self._memo: dict[tuple[NodeState, PodShape], Verdict] = {}

    def observe(self, pod: Pod) -> None:
        if self.policy.observe(pod):
            self._memo.clear()

    def wire_scores(self, states: Sequence[NodeState], names: Sequence[str], pod: Pod) -> list[int]:
        """The 0–10 scores the extender sends for these (passing) nodes."""
        verdicts = []
        for state, name in zip(states, names, strict=True):
            key = (state, pod.shape)
            found = self._memo.get(key)
            if found is None and not fits(state, pod.shape):
                # Reached only when the extender scores without filtering: the advisor refuses the node.
                found = Verdict(name, False, "the advisor's filter refuses this node")
            elif found is None:
                if len(self._memo) >= _MEMO_LIMIT:
                    self._memo.clear()
                found = self._memo[key] = self.policy.verdict(state, pod.shape)
            verdicts.append(replace(found, node=name))
        return [v.score for v in on_the_wire(verdicts)]


def kube_replay(
    nodes: Sequence[NodeSpec],
    order: ArrivalOrder,
    profile: KubeSchedulerProfile,
    *,
    original_pods: Sequence[Pod],
    name: str = "kube-scheduler",
) -> KubeRunResult:
    """Replay ``order`` on an empty cluster through kube-scheduler's cycle for ``profile``."""
    cycle = _Cycle(nodes, order.seed, profile, original_pods)
    arrived_log: list[int] = []
    used_log: list[int] = []
    placements: list[int] = []
    arrived = 0
    for pod in order.pods:
        cycle.advisor.observe(pod)
        placements.append(cycle.schedule(pod))
        arrived += pod.shape.gpu_request
        arrived_log.append(arrived)
        used_log.append(cycle.used)
    capacity = sum(spec.gpu_count for spec in nodes) * MILLI
    logs = (tuple(arrived_log), tuple(used_log), tuple(cycle.frag_log), tuple(placements))
    run = RunResult(name, order.seed, capacity, *logs)
    return KubeRunResult(
        run, cycle.without, cycle.overcommitted, len(cycle.overcommitted_on), cycle.wanted, cycle.off_best
    )


class _Cycle:
    """kube-scheduler's scheduling cycle over the replay's nodes, one pod at a time, and what it did."""

    def __init__(
        self, nodes: Sequence[NodeSpec], seed: int, profile: KubeSchedulerProfile, original_pods: Sequence[Pod]
    ) -> None:
        self.rng = random.Random(seed)
        self.advisor = _Advisor(AdvisorPolicy())
        self.advisor.policy.prepare(RunContext(tuple(nodes), tuple(original_pods), seed))
        self.profile = profile
        self.states = [initial_state(spec) for spec in nodes]
        self.advisor.policy.fleet(self.states)  # the reserve's totals, as the extender's ledger keeps them
        self.kube = [_KubeNode(spec.cpu_milli, spec.memory_mib * MIB) for spec in nodes]
        self.names = [spec.name for spec in nodes]
        count = len(nodes)
        self.wanted = (
            num_feasible_nodes_to_find(profile.percentage_of_nodes_to_score, count) if profile.has_scoring else 1
        )
        self.start = 0
        self.interest: dict[PodShape, bool] = {}
        self.frag_model = FragModel(typical_pods(p.shape for p in original_pods))
        self.frag_per_node = [self.frag_model.node(s) for s in self.states]
        self.frag = sum(self.frag_per_node)
        self.frag_log: list[float] = []
        self.used = self.without = self.overcommitted = self.off_best = 0
        self.overcommitted_on: set[int] = set()

    def schedule(self, pod: Pod) -> int:
        """The node kube-scheduler binds the pod to (-1: none feasible), with its books kept."""
        shape = pod.shape
        cpu, memory = _requests(shape)
        extender = self.profile.extender
        reaches = extender is not None and self.interest.setdefault(
            shape, is_interested(extender.managed_resources, replay_pod_object(shape))
        )
        feasible = self._sample(cpu, memory)
        if reaches and extender is not None and extender.filters:
            holds = self.advisor.policy.holds
            feasible = [n for n in feasible if fits(self.states[n], shape) and not holds(self.states[n], shape)]
        chosen = feasible[0] if len(feasible) == 1 else self._pick(feasible, pod, cpu, memory, reaches)
        if chosen >= 0:
            self._bind(chosen, shape, cpu, memory, reaches)
            self.advisor.policy.moved(chosen, self.states[chosen])
        elif reaches and shape.gpu_request > 0:
            self.advisor.policy.waiting(shape)
        self.frag_log.append(self.frag)
        return chosen

    def _sample(self, cpu: int, memory: int) -> list[int]:
        """Nodes kube-scheduler's own filter admits, from the rotating start, until it has found enough."""
        count, examined = len(self.kube), 0
        feasible: list[int] = []
        while examined < count and len(feasible) < self.wanted:
            node = (self.start + examined) % count
            examined += 1
            if self.kube[node].admits(cpu, memory):
                feasible.append(node)
        self.start = (self.start + examined) % count
        return feasible

    def _pick(self, feasible: list[int], pod: Pod, cpu: int, memory: int, reaches: bool) -> int:
        """The best total of score plugins and extender points; a seeded draw among equal totals."""
        if not feasible:
            return -1
        profile, extender = self.profile, self.profile.extender
        totals = [plugin_total(profile, self.kube[n], cpu, memory) for n in feasible]
        wire: list[int] = []
        if reaches and extender is not None and extender.prioritizes:
            wire = self.advisor.wire_scores([self.states[n] for n in feasible], [self.names[n] for n in feasible], pod)
            totals = [t + extender_points(extender.weight, w) for t, w in zip(totals, wire, strict=True)]
        best = max(totals)
        ties = [n for n, t in zip(feasible, totals, strict=True) if t == best]
        chosen = ties[self.rng.randrange(len(ties))] if len(ties) > 1 else ties[0]
        if wire and pod.shape.gpu_request > 0 and wire[feasible.index(chosen)] < max(wire):
            self.off_best += 1
        return chosen

    def _bind(self, chosen: int, shape: PodShape, cpu: int, memory: int, reaches: bool) -> None:
        state, kube = self.states[chosen], self.kube[chosen]
        kube.cpu_requested += cpu
        kube.memory_requested += memory
        kube.pods += 1
        if shape.gpu_request > 0 and not reaches:
            self.without += 1
        if shape.gpu_request <= 0 or fits(state, shape):
            gpu = -1
            if shape.is_sharing:
                gpu = self.advisor.policy.choose_gpu(state, shape) if reaches else best_fit_gpu(state, shape.gpu_milli)
            self.states[chosen] = place(state, shape, gpu)
            self.used += shape.gpu_request
        else:
            # kube-scheduler does not see the share: the pod lands where its GPUs are taken.
            cpu_free, mem_free = state.cpu_free - shape.cpu_milli, state.mem_free - shape.memory_mib
            self.states[chosen] = NodeState(state.model, cpu_free, mem_free, state.gpus, state.tags)
            self.overcommitted += 1
            self.overcommitted_on.add(chosen)
        value = self.frag_model.node(self.states[chosen])
        self.frag += value - self.frag_per_node[chosen]
        self.frag_per_node[chosen] = value
