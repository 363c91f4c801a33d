"""The served advisor: the cluster model, live telemetry, the scoring policy, a clock and metrics —
what every HTTP edge (extender, dry-run API, webhooks) reads."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from extender.advice.defrag.look import LookSource
from extender.advice.dryrun import Advise
from extender.advice.rightsize import HistorySource
from extender.advice.usage import UsageSource
from extender.cluster.state import ClusterState, NodeState, node_state
from extender.http.approvals import Approvals
from extender.http.metrics import Metrics
from extender.model.pods import PodRequest
from extender.model.readings import TelemetryBoard
from extender.scoring import ScoringPolicy, Verdict, VerdictMemo, judge_all
from extender.scoring.held_pods import HeldPods
from extender.scoring.holding import Holding, holding, pending, waiting_milli
from extender.scoring.planned import prefer_planned
from extender.scoring.reserve_ledger import ReserveLedger
from extender.scoring.standing import standing_requests
from extender.scoring.workload import MixLearner

__all__ = ["MAX_BODY_BYTES", "MAX_CANDIDATES", "Advisor", "Metrics", "pod_key"]

log = logging.getLogger(__name__)


def pod_key(pod: Mapping[str, Any]) -> str:
    """Who a pod is, so the workload mix counts it once however often it is judged, and once more never
    when it runs: ``namespace/name``, as the cluster model keys bound pods."""
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}  # an admitted pod always has one; a hostile body may not
    return f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"


MAX_BODY_BYTES = 64 * 1024 * 1024  # a nocache NodeList of 5,000 nodes with managedFields fits
MAX_CANDIDATES = 20_000  # four times Kubernetes' largest supported cluster


@dataclass
class Advisor:
    """What the HTTP edges need: the cluster model, live telemetry, the policy, a clock, metrics."""

    state: ClusterState
    telemetry: TelemetryBoard | None
    policy: ScoringPolicy
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    clock: Callable[[], float] = time.time
    max_body_bytes: int = MAX_BODY_BYTES
    max_candidates: int = MAX_CANDIDATES
    metrics: Metrics = field(init=False)
    _sent_nodes: dict[tuple[str, str], NodeState] = field(default_factory=dict, init=False)
    # The workload mix stranding is judged against: every pod judged and every GPU pod running.
    learner: MixLearner = field(default_factory=MixLearner, init=False)

    # Admission findings for the dry-run; wired in by the app (the webhook's rules).
    advise: Advise | None = None
    # Where GET /v1/rightsize reads GPU history; wired in by serve (None: not offered).
    rightsize: HistorySource | None = None
    # Where GET /v1/usage reads allocation history; wired in by serve (None: not offered).
    usage: UsageSource | None = None
    # The Pod objects (bound and pending) the console reads: pending pods to diagnose, admission findings
    # of bound ones; wired in by serve (None: the source does not list them).
    pod_objects: Callable[[], list[dict[str, Any]]] | None = None
    # Placements approved and not yet seen bound, and the bind verb; wired in by serve for a live cluster
    # (None: a snapshot or the simulated cluster, which assume nothing and cannot bind).
    approvals: Approvals | None = None
    # The profiles that consult this advisor (``serve --scheduler-config``; default: the printed profile):
    # the bind verb binds only their pods.
    bind_schedulers: frozenset[str] = frozenset({"gpu-advisor"})
    filter_passes: str = "best"  # or "fitting" (``serve --filter-passes``, ``best_node``)
    # Shutting down: not ready, and every answer closes its connection so callers reconnect elsewhere.
    draining: bool = False
    # The nodes an applied defragmentation plan sends this pod to, first fitting one on top (``scoring.planned``),
    # and what a plan on the served model reads besides it (``sources.defrag_look``); wired in by serve.
    planned: Callable[[Mapping[str, Any]], list[str]] | None = None
    defrag_look: LookSource | None = None
    # Told each standing shape's verdicts as they are filled in (the extender encodes them ahead).
    standing_listeners: list[Callable[[list[Verdict]], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.metrics = Metrics(self.registry)
        self.held_pods = HeldPods()
        self.metrics.pods_held.set_function(lambda: self.held_pods.count(self.clock()))
        self._memo_for: ClusterState | None = None
        self._standing = False  # keep_standing has been asked for
        self._memo = VerdictMemo()
        self._verdict_memo()  # follow the board from now on, off the request path

    def _verdict_memo(self) -> VerdictMemo:
        """The memo that follows this advisor's current ClusterState (renewed if the state is swapped)."""
        if self._memo_for is not self.state:
            self._memo = VerdictMemo()
            self.reserve = ReserveLedger(self.state.nodes_by_name)
            self.state.subscribe(self._memo.forget)
            self.state.subscribe(self.reserve.changed)
            self.state.subscribe(self._learn_running)
            self._memo_for = self.state
            self._learn_running(None)
            if self.telemetry is not None:
                self._memo.after_follow.append(self._refreshed)
                self._memo.watch(self.telemetry, self.policy, self.state.nodes_by_name, self.clock)
            self.state.subscribe(self._replaced)
            if self._standing:  # a new state: its standing shapes are worked out afresh
                self._fill_standing(self._memo)
        return self._memo

    def keep_standing(self) -> None:
        """Work out, and from now on keep, the verdicts of every whole-GPU count the fleet offers on
        every node (``scoring.standing``): once the model is built, after a full resync, and for the
        nodes a telemetry refresh moved (on the refreshing thread, right after the memo follows it)."""
        memo = self._verdict_memo()
        self._standing = True
        self._fill_standing(memo)

    def _refreshed(self) -> None:
        """A telemetry refresh was followed: fill in the standing shapes where it moved nodes, on the
        refreshing thread, before the memo's tables show their new versions (``VerdictMemo.version``)."""
        if self._standing:
            self._fill_standing()

    def _replaced(self, names: Iterable[str] | None) -> None:
        if names is None and self._standing:
            self._fill_standing()

    def _fill_standing(self, memo: VerdictMemo | None = None) -> None:
        """Fill in the standing shapes' tables where nodes changed; a failure leaves them to be worked
        out on request, as any shape (logged and counted, never raised into the refresh or the watch)."""
        try:
            memo = memo or self._verdict_memo()
            nodes = self.state.nodes_by_name()
            names, placer, mix = list(nodes), self.state.machines.placer, self.learner.current
            for request in standing_requests(nodes.values()):
                memo.pin(memo.shape(request, self.policy, self.telemetry, mix))
                found = judge_all(
                    request, names, nodes, self.telemetry, self.policy, self.clock(), memo, placer, mix, False
                )
                for listener in self.standing_listeners:
                    listener(found)
        except Exception:
            log.exception("working out the standing pod shapes failed: they are judged on request")
            self.metrics.standing_failures.inc()

    def _learn_running(self, names: Iterable[str] | None) -> None:
        """Count the GPU pods running on nodes that changed (all of them after a full replace)."""
        nodes = self.state.nodes() if names is None else [self.state.node(n) for n in names]
        for node in nodes:
            for pod in node.pods if node is not None else ():
                self.learner.observe(pod.key, pod.request)
            if node is not None:
                self.reserve.bound(pod.key for pod in node.pods)
                self.held_pods.bound(pod.key for pod in node.pods)

    def learn(self, request: PodRequest, key: str) -> None:
        """Count a pod about to be judged (once per ``key``, see :func:`pod_key`) into the mix."""
        self._verdict_memo()  # follows the current ClusterState, and has counted its running pods
        if not request.invalid:
            self.learner.observe(key, request)

    def learn_look(self, pods: Iterable[Mapping[str, Any]]) -> None:
        """The pending pods of the look the model was built from (a snapshot, the simulated cluster),
        learned as explain learns them (``holding.look``): counted into the mix, renewed at once, and
        those kube-scheduler found no node for waiting in the reserve's ledger. Without this the served
        advisor knew a pending pod only once judged, and its mix only at the next doubling, so its
        dry-run and filter passed a share that explain and diagnose said the reserve holds."""
        self._verdict_memo()  # follows the current ClusterState, and has counted its running pods
        now = self.clock()
        for key, request, pod in pending(pods):
            self.learner.observe(key, request)
            if waiting := waiting_milli(request, pod):
                self.reserve.heard(key, waiting, False, now)
        self.learner.renew()

    def node_for(self, name: str, sent: dict[str, Any] | None) -> NodeState | None:
        """Our model of a node; for a node we have not synced, what its sent object says (nocache)."""
        known = self.state.node(name)
        if known is not None or sent is None:
            return known
        key = (name, str((sent.get("metadata") or {}).get("resourceVersion", "")))
        cached = self._sent_nodes.get(key)
        if cached is None:
            if len(self._sent_nodes) > 50_000:
                self._sent_nodes.clear()
            cached = self._sent_nodes[key] = node_state(sent, machines=self.state.machines)
        return cached

    def verdicts_version(self, request: PodRequest, pod: Mapping[str, Any] | None = None) -> float | None:
        """A token that stays the same while this pod shape's remembered verdicts do (None: none
        remembered): a reply made from them may be reused while it holds."""
        if pod is not None and self.planned is not None and self.planned(pod):
            return None  # sent where a plan said: its reply is its own, never reused for its shape
        if not request.wants_gpu and not request.cpu_milli:
            # Never judged (every node passes, whatever the cluster does), so a reply holds for good:
            # without managedResources (the printed default) every pod of the profile comes here.
            return 0.0
        mix = self.learner.current
        if not request.wants_gpu and not (request.cpu_milli and mix.pods):
            return None
        memo = self._verdict_memo()
        version = memo.version(memo.shape(request, self.policy, self.telemetry, mix), self.clock())
        if version is not None and self.holding(request, pod) is not None:
            # Held now: the reply differs from the one made while it was not, and holds while both do.
            return -1.0 - version
        return version

    def holding(self, request: PodRequest, pod: Mapping[str, Any] | None = None) -> Holding | None:
        """How the reserve (``scoring.holding``) holds this pod now, from the ledger's totals; None when it
        does not. ``pod``: its object (the hold limit counts from its status; None: held from now)."""
        now = self.clock()
        mix, takes = self.learner.current, self.reserve.takes
        return holding(request, self.policy, mix, lambda wants: self.reserve.fleet(wants, now), pod, now, takes)

    def judge_apart(
        self,
        request: PodRequest,
        names: list[str],
        nodes: Mapping[str, NodeState],
        ranked: bool = True,
        now: float | None = None,
    ) -> list[Verdict]:
        """Verdicts against ``nodes`` as given, apart from the shared memo (a node as promised to the bind
        verb, the console's views, Node objects kube-scheduler sent): the advisor's telemetry, policy,
        placer and learned mix, at ``now`` (its clock's)."""
        now = self.clock() if now is None else now
        placer, mix = self.state.machines.placer, self.learner.current
        return judge_all(request, names, nodes, self.telemetry, self.policy, now, placer=placer, mix=mix, ranked=ranked)

    def judge(
        self,
        request: PodRequest,
        names: list[str],
        sent: dict[str, dict[str, Any]],
        ranked: bool = True,
        key: str | None = None,
        pod: Mapping[str, Any] | None = None,
    ) -> list[Verdict]:
        """Verdicts for every candidate against the mix learned so far (:meth:`learn` counts the pod),
        with the nodes the reserve holds a share off refused; ``ranked=False``: scores as worked out, not
        as kube-scheduler is told them (``ranking``). ``key``: the pod's (a filter call), so the reserve
        knows it waits when no node passes; ``pod``: its object (its hold limit)."""
        verdicts, nodes = self._judged(request, names, sent, ranked)
        found, held = self.holding(request, pod), 0
        if found is not None:
            verdicts, held = found.apply(request, verdicts, nodes)
        if ranked and pod is not None and self.planned is not None and (planned := self.planned(pod)):
            verdicts = prefer_planned(verdicts, planned)
        if key is not None:
            self.held_pods.judged(request, held)  # what a reply kept from this call holds
            self.heard(request, key, any(v.fits for v in verdicts), pod, held)
        return verdicts

    def heard(
        self, request: PodRequest, key: str, passed: bool, pod: Mapping[str, Any] | None = None, held: int = -1
    ) -> None:
        """A filter call for this pod passed some node or none (``held``: nodes the reserve refused it;
        -1: a reply given again, as many as when it was made): a GPU pod asking in milli that none passed
        waits (what the reserve takes off the free milli still to come); a call that held is counted."""
        if request.share is None or request.share.milli is None:
            return
        found = self.holding(request, pod) if held else None  # as judged: before it counts as waiting
        now = self.clock()
        self.reserve.heard(key, request.gpus * request.share.milli, passed, now)
        if held < 0:
            held = self.held_pods.held_by(request) if found is not None else 0
        if held:
            self.metrics.held.inc()
        until = found.until if found is not None else now
        self.held_pods.heard(key, held > 0 and not passed, until, now)

    def _judged(
        self, request: PodRequest, names: list[str], sent: dict[str, dict[str, Any]], ranked: bool
    ) -> tuple[list[Verdict], Mapping[str, NodeState]]:
        mix = self.learner.current
        if sent:
            # nocache: nodes we have not synced are judged from the objects sent; no shared memo, as
            # those objects are not followed.
            found = {name: self.node_for(name, item) for name, item in sent.items()}
            nodes = {name: node for name, node in found.items() if node is not None}
            return self.judge_apart(request, names, nodes, ranked), nodes
        known = self.state.nodes_by_name()
        return judge_all(
            request,
            names,
            known,
            self.telemetry,
            self.policy,
            self.clock(),
            memo=self._verdict_memo(),
            placer=self.state.machines.placer,
            mix=mix,
            ranked=ranked,
        ), known
