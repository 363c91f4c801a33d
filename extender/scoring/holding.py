"""The reserve as it stands for one pod: whether it holds the pod now, how, and until when.

One decision for every place that judges a pod, so they agree: the extender's filter and prioritize
(the fleet's totals from its ledger, ``reserve_ledger``), the dry-run and the console (the same ledger),
and explain and diagnose against a snapshot or one look at a cluster (totals summed from that look,
with the pods kube-scheduler has found no node for as the waiting ones). A pod past its hold limit
(``hold_clock``) is judged as if no reserve existed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from extender.cluster.state import NodeState
from extender.model.pods import PodRequest, PodSpecError, pod_request
from extender.scoring.hold_clock import held_since, hold_ends, released
from extender.scoring.policy import ScoringPolicy
from extender.scoring.reserve import Demand, Fleet, Takes, demand, hold, holds, share_milli
from extender.scoring.reserve_ledger import FleetTotals, node_part
from extender.scoring.verdict import Verdict
from extender.scoring.workload import Mix, learned_from

__all__ = ["FleetOf", "Holding", "Reserve", "holding", "look", "look_fleet", "pending", "waiting_milli"]

FleetOf = Callable[[Demand], Fleet]  # the fleet's totals with the room of this demand's median pod


@dataclass(frozen=True)
class Holding:
    """The reserve holds this pod now: its share is refused on every node where it would take
    whole-GPU room, until ``until`` (seconds since the epoch) at the latest."""

    wants: Demand
    fleet: Fleet
    until: float
    takes: Takes | None = None

    def apply(
        self, request: PodRequest, verdicts: list[Verdict], nodes: Mapping[str, NodeState]
    ) -> tuple[list[Verdict], int]:
        """The verdicts with the held nodes refused, and how many were."""
        return hold(request, verdicts, nodes, self.wants, self.fleet, self.takes)


# How a view asks the reserve about a pod: its request and its object (None: a manifest, held from now).
Reserve = Callable[[PodRequest, Mapping[str, Any] | None], "Holding | None"]


def holding(
    request: PodRequest,
    policy: ScoringPolicy,
    mix: Mix,
    fleet: FleetOf,
    pod: Mapping[str, Any] | None,
    now: float,
    takes: Takes | None = None,
) -> Holding | None:
    """How the reserve holds this pod now; None when it does not (not a share in milli, the policy
    turned it off, no whole-GPU pods learned, room enough, or the pod is past its hold limit).
    ``pod``: its object, whose status says since when it waits (None: a manifest, held from now)."""
    milli = share_milli(request)
    wants = demand(mix) if milli is not None and policy.reserve_whole_gpus else None
    if milli is None or wants is None:
        return None
    limit = policy.reserve_hold_limit_s
    if released(pod, now, limit):
        return None
    found = fleet(wants)
    if not holds(wants, found, milli):
        return None
    return Holding(wants, found, hold_ends(pod, now, limit), takes)


def pending(pods: Iterable[Mapping[str, Any]]) -> Iterator[tuple[str, PodRequest, Mapping[str, Any]]]:
    """The pods of one look at a cluster that are not placed (no ``nodeName``), by key, with their
    requests (a pod whose spec cannot be read is left out, as the filter refuses it)."""
    for pod in pods:
        spec, meta = pod.get("spec"), pod.get("metadata")
        if not isinstance(spec, Mapping) or spec.get("nodeName") or not isinstance(meta, Mapping):
            continue
        try:
            request = pod_request(pod)
        except PodSpecError:
            continue
        yield f"{meta.get('namespace', 'default')}/{meta.get('name', '')}", request, pod


def waiting_milli(request: PodRequest, pod: Mapping[str, Any]) -> int:
    """The milli a pending pod counts as waiting: its shares in milli once kube-scheduler has found no
    node for it (what the extender's ledger counts as waiting: the pods its filter passed nowhere)."""
    if held_since(pod) is None or request.share is None or request.share.milli is None:
        return 0
    return request.gpus * request.share.milli


def look_fleet(nodes: Mapping[str, NodeState], pods: Iterable[Mapping[str, Any]]) -> FleetOf:
    """The fleet's totals from one look at a cluster (a snapshot, or a listing): the sharing nodes'
    parts, and as waiting the shares in milli of the pending pods kube-scheduler has found no node for."""
    totals = FleetTotals()
    for name, node in nodes.items():
        totals.put(name, node_part(node))
    waiting = sum(waiting_milli(request, pod) for _, request, pod in pending(pods))
    return lambda wants: totals.fleet(wants, waiting)


def look(
    nodes: Mapping[str, NodeState], pods: Iterable[Mapping[str, Any]], policy: ScoringPolicy, now: float
) -> tuple[Mix, Reserve]:
    """What the served advisor judges with, from one look at a cluster (a snapshot, or a listing; its
    pods already read through their DRA claims): the mix of the GPU pods there (running, and pending
    ones: the extender has judged those), and the reserve's holds with :func:`look_fleet`'s totals.
    A served advisor learns a snapshot's pending pods the same way (``Advisor.learn_look``)."""
    pods = list(pods)
    seen = [(p.key, p.request) for n in nodes.values() for p in n.pods]
    seen += [(key, request) for key, request, _ in pending(pods)]
    mix, fleet = learned_from(seen), look_fleet(nodes, pods)
    return mix, lambda request, pod: holding(request, policy, mix, fleet, pod, now)
