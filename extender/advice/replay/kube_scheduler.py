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

An outage (``outage.Outage``: a window of the arrival order) models the advisor away, as a crash or a
rolling upgrade leaves it, for a pod that would reach the extender:

- A failing filter call fails the cycle unless the extender is ``ignorable``; so does a failing bind
  call (``bindVerb``). Such a pod is not bound: it waits (kube-scheduler's backoff) and is scheduled
  with the advisor right after the window, in arrival order, before any later arrival. Its failed
  cycle still moves the sampling's start index.
- Otherwise (``ignorable``, or an extender that only prioritizes: kube-scheduler ignores a failing
  prioritize call always) kube-scheduler binds it by its own plugins, blind to its GPU share, as for a
  pod that does not reach the extender: over-commit is counted the same way.

The advisor learns each pod when it is scheduled (a pod that waited, when the advisor is back); every
pod bound after the window is one more event of the run's curves (arrived demand unchanged).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from extender.advice.replay.advisor_policy import AdvisorPolicy, replay_pod_object
from extender.advice.replay.fragmentation import FragModel
from extender.advice.replay.kube_node import MIB, KubeNode, plugin_total, requests
from extender.advice.replay.kube_profile import KubeSchedulerProfile
from extender.advice.replay.kube_scores import extender_points, is_interested, num_feasible_nodes_to_find
from extender.advice.replay.nodes import NodeState, best_fit_gpu, fits, initial_state, place
from extender.advice.replay.run_result import RunResult
from extender.advice.replay.scorer import RunContext
from extender.advice.replay.specs import MILLI, ArrivalOrder, NodeSpec, Pod, PodShape
from extender.advice.replay.workload import typical_pods
from extender.scoring.ranking import on_the_wire
from extender.scoring.verdict import Verdict

__all__ = ["KubeRunResult", "kube_replay"]

_MEMO_LIMIT = 400_000


@dataclass(frozen=True, slots=True)
class KubeRunResult:
    """One run, and what kube-scheduler did that the advisor did not choose."""

    run: RunResult
    without_advisor: int  # GPU pods placed without the extender being asked (or while it was away)
    overcommitted_pods: int  # of those, pods whose node had not the GPUs they ask free
    overcommitted_nodes: int  # nodes holding at least one over-committed pod
    sampled: int  # feasible nodes kube-scheduler stops at (numFeasibleNodesToFind)
    off_best: int = 0  # GPU pods the advisor was asked about, bound where its wire score was not the top
    waited: int = 0  # pods that waited for the advisor through an outage
    blind: int = 0  # pods bound during an outage that the advisor would have been asked about
    blind_gpu: int = 0  # of those, pods asking GPUs


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
    outage: range = range(0),
) -> KubeRunResult:
    """Replay ``order`` on an empty cluster through kube-scheduler's cycle for ``profile``; the pods at
    the indexes of ``outage`` arrive while the advisor is away."""
    cycle = _Cycle(nodes, order.seed, profile, original_pods)
    placements = [-1] * len(order.pods)
    waiting: list[int] = []
    for index, pod in enumerate(order.pods):
        if index == outage.stop:
            cycle.back(waiting, order.pods, placements)
        cycle.arrived += pod.shape.gpu_request
        if index in outage:
            placed = cycle.away(pod)
            if placed is None:
                waiting.append(index)
            else:
                placements[index] = placed
        else:
            placements[index] = cycle.schedule(pod)
        cycle.log()
    cycle.back(waiting, order.pods, placements)  # a window that ends with the last arrival
    capacity = sum(spec.gpu_count for spec in nodes) * MILLI
    logs = (tuple(cycle.arrived_log), tuple(cycle.used_log), tuple(cycle.frag_log), tuple(placements))
    run = RunResult(name, order.seed, capacity, *logs)
    return KubeRunResult(
        run,
        cycle.without,
        cycle.overcommitted,
        len(cycle.overcommitted_on),
        cycle.wanted,
        cycle.off_best,
        cycle.waited,
        cycle.blind,
        cycle.blind_gpu,
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
        self.kube = [KubeNode(spec.cpu_milli, spec.memory_mib * MIB) for spec in nodes]
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
        self.arrived_log: list[int] = []
        self.used_log: list[int] = []
        self.frag_log: list[float] = []
        self.arrived = self.used = self.without = self.overcommitted = self.off_best = 0
        self.waited = self.blind = self.blind_gpu = 0
        self.overcommitted_on: set[int] = set()

    def log(self) -> None:
        """One event of the run's curves: arrived and used milli-GPU, and the cluster's F, now."""
        self.arrived_log.append(self.arrived)
        self.used_log.append(self.used)
        self.frag_log.append(self.frag)

    def _reaches(self, shape: PodShape) -> bool:
        extender = self.profile.extender
        return extender is not None and self.interest.setdefault(
            shape, is_interested(extender.managed_resources, replay_pod_object(shape))
        )

    def schedule(self, pod: Pod) -> int:
        """The node kube-scheduler binds the pod to with the advisor up (-1: none feasible), with its
        books kept."""
        self.advisor.observe(pod)
        shape = pod.shape
        cpu, memory = requests(shape)
        extender = self.profile.extender
        reaches = self._reaches(shape)
        feasible = self._sample(cpu, memory)
        if reaches and extender is not None and extender.filters:
            holds = self.advisor.policy.holds
            feasible = [n for n in feasible if fits(self.states[n], shape) and not holds(self.states[n], shape)]
        chosen = feasible[0] if len(feasible) == 1 else self._pick(feasible, pod, cpu, memory, reaches)
        if chosen >= 0:
            self._bind(chosen, shape, cpu, memory, reaches)
        elif reaches and shape.gpu_request > 0:
            self.advisor.policy.waiting(shape)
        return chosen

    def away(self, pod: Pod) -> int | None:
        """The pod's turn while the advisor is away: None when it waits for the advisor, else the node
        kube-scheduler binds it to (-1: none feasible)."""
        shape, extender = pod.shape, self.profile.extender
        if extender is None or not self._reaches(shape):
            return self.schedule(pod)  # kube-scheduler would not have asked the advisor anyway
        cpu, memory = requests(shape)
        feasible = self._sample(cpu, memory)  # the cycle runs (and moves the start index) either way
        if not extender.ignorable and (extender.filters or extender.binds):
            self.waited += 1
            return None
        self.advisor.observe(pod)  # learned from the running pods once the advisor is back
        chosen = feasible[0] if len(feasible) == 1 else self._pick(feasible, pod, cpu, memory, False)
        if chosen >= 0:
            self._bind(chosen, shape, cpu, memory, False)
            self.blind += 1
            self.blind_gpu += shape.gpu_request > 0
        return chosen

    def back(self, waiting: list[int], pods: Sequence[Pod], placements: list[int]) -> None:
        """The advisor is back: the pods that waited for it are scheduled, in arrival order."""
        for index in waiting:
            placements[index] = self.schedule(pods[index])
            self.log()
        waiting.clear()

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
        state = self.states[chosen]
        self.kube[chosen].take(cpu, memory)
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
        self.advisor.policy.moved(chosen, self.states[chosen])
