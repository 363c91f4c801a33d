"""The advisor's own policy in the replay: every node judged by the very code filter and prioritize serve.

Each trace node becomes a Kubernetes Node in the Alibaba GPU-share convention (capacity ``cpu``,
``memory``, ``alibabacloud.com/gpu-count``; label ``alibabacloud.com/gpu-card-model``) with bound Pods
holding its used GPU milli (``alibabacloud.com/gpu-milli`` with the ``alibabacloud.com/gpu-index`` they
sit on); each pod of the trace becomes a Pod asking its CPU, memory and GPUs the same way. The cluster
model reads them (``extender.cluster.node_state``, ``extender.model.pod_request``) and one node is
judged as filter and prioritize judge it (``extender.scoring.judge.judge_node``). The score is the
verdict's full-precision rank (stranding level, then the blend), which is what the wire's 0–10 scores
keep the argmax of (``extender.scoring.ranking``).

Speed: a replay node is built once per distinct state, a request once per pod shape, and a verdict is
kept per (pod shape, the node content its rank depends on — ``stranding.class_key``) for the current
mix version, so identical nodes share one answer.

``advisor`` learns the mix online, from the arrivals so far (what a live scheduler can know);
``advisor-given`` is handed the whole trace's mix up front (FGD's setting).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from extender.advice.replay.nodes import NodeState as ReplayNode
from extender.advice.replay.scorer import RunContext, Scorer
from extender.advice.replay.specs import MILLI, Pod, PodShape
from extender.cluster.shares import ALIBABA_INDEX
from extender.cluster.state import BoundPod, MachineTypes, NodeState, bound_pod, node_state
from extender.model.gpu_share import ALIBABA_COUNT, ALIBABA_MILLI, ALIBABA_MODEL
from extender.model.pods import PodRequest, pod_request
from extender.scoring import reserve
from extender.scoring.judge import judge_node
from extender.scoring.memo import PlanKey, Shape
from extender.scoring.policy import ScoringPolicy
from extender.scoring.reserve_ledger import FleetTotals
from extender.scoring.stranding import class_key
from extender.scoring.verdict import Verdict
from extender.scoring.workload import NO_MIX, Mix, MixLearner, learned_from

__all__ = ["ADVISOR_POLICIES", "AdvisorPolicy", "rank_score", "replay_node_object", "replay_pod_object"]

_NODE = "replay-node"
_LEVEL_STEP = 10**7  # the rank's blend (in [0, 1]) to 6 decimals fits below one stranding level


def rank_score(verdict: Verdict) -> int:
    """The verdict's rank (stranding level, blend) as one integer with the same order."""
    level, blend = verdict.rank
    return int(level) * _LEVEL_STEP + round(blend * 10**6)


def replay_pod_object(shape: PodShape, name: str = "replay-pod", gpu_index: int | None = None) -> dict[str, Any]:
    """A Pod asking what ``shape`` asks, in the Alibaba convention (and bound to ``gpu_index``, if given)."""
    notes: dict[str, str] = {}
    if shape.num_gpu > 0 and shape.gpu_milli > 0:
        notes = {ALIBABA_MILLI: str(shape.gpu_milli), ALIBABA_COUNT: str(shape.num_gpu)}
        if shape.gpu_spec:
            notes[ALIBABA_MODEL] = shape.gpu_spec
    if gpu_index is not None:
        notes[ALIBABA_INDEX] = str(gpu_index)
    requests = {"cpu": f"{shape.cpu_milli}m", "memory": f"{shape.memory_mib}Mi"}
    container = {"name": "main", "resources": {"requests": requests}}
    meta = {"name": name, "namespace": "openb", "annotations": notes}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [container]}}


def replay_node_object(name: str, model: str, cpu_milli: int, memory_mib: int, gpus: int) -> dict[str, Any]:
    """A Node offering ``gpus`` GPUs of ``model`` for sharing in the Alibaba convention."""
    capacity = {"cpu": f"{cpu_milli}m", "memory": f"{memory_mib}Mi", "pods": "1000"}
    if gpus:
        capacity |= {ALIBABA_COUNT: str(gpus), ALIBABA_MILLI: str(gpus * MILLI)}
    labels = {"kubernetes.io/hostname": name} | ({ALIBABA_MODEL: model} if model else {})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": capacity, "allocatable": dict(capacity)},
    }


class AdvisorPolicy:
    """Scorer + GpuChooser + Observer over the extender's own judge."""

    # Ties among the best nodes go where the live extender puts them (``ranking.tie_order``), not by rank.
    names_break_ties = True

    def __init__(self, *, given: bool = False, policy: ScoringPolicy | None = None) -> None:
        self.name = "advisor-given" if given else "advisor"
        self._given = given
        self._policy = policy or ScoringPolicy()
        self._machines = MachineTypes()
        self._reset(NO_MIX)

    def _reset(self, mix: Mix) -> None:
        self._learner = MixLearner()
        self._mix = mix
        self._nodes: dict[ReplayNode, NodeState] = {}
        self._requests: dict[PodShape, PodRequest] = {}
        self._holders: dict[tuple[int, int], BoundPod] = {}
        self.fleet(())
        self._renewed()

    def _renewed(self) -> None:
        self._shapes: dict[PodShape, Shape] = {}
        self._scores: dict[tuple[PodShape, Hashable], int] = {}

    def prepare(self, context: RunContext) -> None:
        """A fresh run: nothing learned (online), or the whole trace's mix (given)."""
        self._reset(NO_MIX)
        if self._given:
            self._mix = learned_from((pod.name, self._request(pod.shape)) for pod in context.original_pods)

    def observe(self, pod: Pod) -> bool:
        """Online: learn the arriving pod; True when the mix was renewed (remembered scores are stale)."""
        if self._given or not self._learner.observe(pod.name, self._request(pod.shape)):
            return False
        self._mix = self._learner.current
        self._renewed()
        return True

    def score(self, node: ReplayNode, pod: PodShape) -> int:
        """The node's rank for the pod, as the extender judges it."""
        room, asked = (node.cpu_free, node.mem_free), (pod.cpu_milli, pod.memory_mib)
        key = (pod, class_key(self._mix, node.model or None, None, node.gpus, room, asked))
        found = self._scores.get(key)
        if found is None:
            found = self._scores[key] = rank_score(self.verdict(node, pod))
        return found

    def fleet(self, states: Sequence[ReplayNode]) -> None:
        """The fleet's totals the reserve reads, from the empty cluster on (as the extender's ledger)."""
        self._totals = FleetTotals()
        for node, state in enumerate(states):
            self.moved(node, state)
        self._waiting = 0

    def moved(self, node: int, state: ReplayNode) -> None:
        self._totals.put(node, (state.gpus, state.cpu_free, state.mem_free))

    def waiting(self, pod: PodShape) -> None:
        self._waiting += pod.gpu_request

    def resumed(self, pod: PodShape) -> None:
        self._waiting -= pod.gpu_request

    @property
    def hold_limit_s(self) -> float:
        """How long a held pod waits at most (the policy's ``reserve_hold_limit_s``)."""
        return self._policy.reserve_hold_limit_s

    def holds(self, node: ReplayNode, pod: PodShape) -> bool:
        """The reserve's answer for a share on this node, as the extender's filter gives it."""
        wants = reserve.demand(self._mix) if pod.is_sharing and self._policy.reserve_whole_gpus else None
        if wants is None:
            return False
        if not reserve.holds(wants, self._totals.fleet(wants, self._waiting), pod.gpu_milli):
            return False
        asked = (pod.gpu_milli, pod.cpu_milli, pod.memory_mib)
        return reserve.takes_room(node.gpus, node.cpu_free, node.mem_free, asked, wants)

    def choose_gpu(self, node: ReplayNode, pod: PodShape) -> int:
        """The GPU the extender's verdict names for a sharing pod."""
        gpus = self.verdict(node, pod).gpus
        if not gpus:
            raise ValueError(f"the advisor named no GPU for {pod} on {node}")
        return gpus[0]

    def verdict(self, node: ReplayNode, pod: PodShape) -> Verdict:
        """The extender's verdict on this node for this pod (it must agree with the replay's filter)."""
        shape = self._shapes.get(pod)
        if shape is None:
            shape = self._shapes[pod] = Shape(PlanKey(self._request(pod), self._policy, self._mix), None)
        verdict, _ = judge_node(self._node(node), _NODE, shape, self._machines.placer, 0.0)
        if not verdict.fits:
            raise ValueError(f"the advisor refuses a node the replay's filter admits: {verdict.reason}")
        return verdict

    def _request(self, shape: PodShape) -> PodRequest:
        found = self._requests.get(shape)
        if found is None:
            found = self._requests[shape] = pod_request(replay_pod_object(shape))
        return found

    def _holder(self, gpu: int, milli: int) -> BoundPod:
        found = self._holders.get((gpu, milli))
        if found is None:
            shape = PodShape(0, 0, 1, milli)
            placed = bound_pod(replay_pod_object(shape, f"holds-{gpu}-{milli}", gpu) | {"spec": _bound(shape)})
            assert placed is not None
            found = self._holders[(gpu, milli)] = placed[1]
        return found

    def _node(self, node: ReplayNode) -> NodeState:
        found = self._nodes.get(node)
        if found is None:
            # What is free is all the judge needs: the node offers its free CPU and memory, and one bound
            # pod per GPU in use holds that GPU's used milli.
            obj = replay_node_object(_NODE, node.model, node.cpu_free, node.mem_free, len(node.gpus))
            pods = [self._holder(i, MILLI - free) for i, free in enumerate(node.gpus) if free < MILLI]
            found = self._nodes[node] = node_state(obj, pods, self._machines)
        return found


def _bound(shape: PodShape) -> dict[str, Any]:
    spec = replay_pod_object(shape)["spec"]
    return {**spec, "nodeName": _NODE}


ADVISOR_POLICIES: dict[str, Callable[[], Scorer]] = {
    "advisor": AdvisorPolicy,
    "advisor-given": lambda: AdvisorPolicy(given=True),
}
