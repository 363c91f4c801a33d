"""What a defragmentation plan on the served model reads besides the model itself: the Node objects it
rebuilds after each move, the bound GPU pods with their owners, labels and priority, and the
PodDisruptionBudgets.

With a snapshot (or the simulated cluster) all three were read at start, with the model. With the live
cluster the nodes are the watch's own (trimmed, as the model was built from them); pods and budgets are
listed when a plan is asked for, with the advisor's read rights. The watch keeps no pod's owners, labels
or priority (at 5,000 nodes the model keeps only what placement reads), and a plan is asked rarely and
by a person, so one list then costs less than keeping every pod's object and a PDB watch all the time;
it is also the cluster the operator's ``--apply`` will meet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from extender.advice.defrag.look import DefragLook, LookSource
from extender.cluster.dra_view import node_through_slices, pod_through_claims

if TYPE_CHECKING:
    from extender.sources.kube_watch import KubeSource

__all__ = ["kept_look", "live_look"]


def kept_look(
    nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]], budgets: Sequence[Mapping[str, Any]]
) -> LookSource:
    """A look read once (a snapshot, the simulated cluster): the same objects for every plan."""
    look = DefragLook(list(nodes), [p for p in pods if (p.get("spec") or {}).get("nodeName")], list(budgets))
    return lambda: look


def live_look(watch: KubeSource, clock: Callable[[], float]) -> LookSource:
    """The watch's nodes (DRA GPUs read through their slices, as the model reads them), and the bound GPU
    pods and PodDisruptionBudgets as the API server lists them now."""

    def look() -> DefragLook:
        from extender.sources.disruption_budgets import listed_budgets
        from extender.sources.kube import ApiServerError, api_error_message, list_bound_gpu_pods

        with watch.model.lock:
            nodes = list(watch.model.nodes.values())
        dra, now = watch.state.dra, clock()
        try:
            pods = list_bound_gpu_pods(watch.api)
        except Exception as exc:  # the client raises many kinds; the caller needs the one line
            raise ApiServerError(f"cannot list the bound pods: {api_error_message(exc)}") from None
        return DefragLook(
            [node_through_slices(n, dra, now) for n in nodes],
            [pod_through_claims(p, dra) for p in pods],
            listed_budgets(watch.api),
        )

    return look
