"""``--cluster simulated|kube|FILE``: where the cluster model comes from, decided here for every command.

The server keeps a model current (a snapshot file or the simulated cluster once, the live cluster by
list + watch); explain, diagnose and ``gpu-advisor snapshot`` take one look (the live cluster: one list).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from extender.cluster.dra_view import DraObjects, node_through_slices, pod_through_claims
from extender.cluster.state import ClusterState
from extender.model.readings import TelemetryBoard
from extender.sources.pod_index import PodIndex
from extender.sources.snapshot import Snapshot, SnapshotError, load_snapshot, simulated_cluster

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from extender.sources.kube_watch import KubeSource

__all__ = ["KUBE", "NO_KUBECONFIG", "SIMULATED", "LiveModel", "live_model", "one_look", "source_name"]

SIMULATED = "simulated"
SIMULATED_RACK = "simulated-rack"  # the simulated cluster beside an NVL72 rack of 18 trays
KUBE = "kube"
# Said when --cluster kube (the default of diagnose, snapshot, rightsize and usage) finds no kubeconfig.
NO_KUBECONFIG = (
    "--cluster kube reads the live cluster through --kubeconfig FILE, $KUBECONFIG or ~/.kube/config; "
    "--cluster simulated reads the built-in one, --cluster FILE a snapshot"
)


def source_name(cluster: str) -> str:
    """How the model names its source (``/readyz`` says it): simulated, kube or ``snapshot FILE``."""
    return cluster if cluster in (SIMULATED, SIMULATED_RACK, KUBE) else f"snapshot {cluster}"


def one_look(cluster: str, kubeconfig: str | None = None) -> Snapshot:
    """The simulated cluster, a snapshot file, or the live cluster as one list (no watch)."""
    if cluster in (SIMULATED, SIMULATED_RACK):
        return simulated_cluster(rack=cluster == SIMULATED_RACK)
    if cluster == KUBE:
        # Imported here: the kubernetes client takes a second to import, and most commands never need it.
        from extender.sources.kube import ApiServerError, api_error_message, kube_api, list_cluster
        from extender.sources.kube_dra import list_dra

        try:
            api = kube_api(kubeconfig)
        except Exception as exc:  # no kubeconfig, or one that does not load: say what was read, and the choice
            raise ApiServerError(f"cannot read a kubeconfig ({api_error_message(exc)}); {NO_KUBECONFIG}") from None
        try:
            nodes, pods = list_cluster(api)
            dra = DraObjects.read(list_dra(api.api_client))
        except Exception as exc:  # the client raises many kinds; the user needs the one line
            raise ApiServerError(f"cannot list the cluster: {api_error_message(exc)}") from None
        at = time.time()
        # GPUs published and claimed through DRA, as the model reads device-plugin GPUs (as a snapshot file's are)
        nodes = [dict(node_through_slices(n, dra, at)) for n in nodes]
        return Snapshot(nodes, [dict(pod_through_claims(p, dra)) for p in pods], {}, at, dra)
    return load_snapshot(cluster)


@dataclass
class LiveModel:
    """What the server judges against, and the API server watch that keeps it current (kube only)."""

    state: ClusterState
    telemetry: TelemetryBoard | None
    pods: PodIndex | list[dict[str, Any]]  # where pods run, for placing telemetry series
    watch: KubeSource | None = None
    nodes: list[dict[str, Any]] = field(default_factory=list)  # a snapshot's Node objects (a defrag plan's)


def live_model(
    cluster: str,
    kubeconfig: str | None,
    telemetry_max_age_s: float,
    on_synced: Callable[[], None],
    registry: CollectorRegistry | None = None,
    claims_namespace: str | None = None,
) -> LiveModel:
    """The model ``gpu-advisor serve`` starts from; ``on_synced`` runs once the live cluster is listed.
    The live watch registers its metrics (watch health, invalid objects) in ``registry``, and reads the
    claims Leases in ``claims_namespace`` (None: the pod's own namespace, else the default)."""
    if cluster == KUBE:
        from extender.sources.claims_writer import own_namespace
        from extender.sources.kube import ApiServerError, kube_api
        from extender.sources.kube_watch import DEFAULT_CLAIMS_NAMESPACE, KubeSource

        try:
            api = kube_api(kubeconfig)
        except Exception as exc:  # the client raises many kinds; the user needs the one line
            raise ApiServerError(f"cannot reach the cluster: {exc}") from None
        state = ClusterState(KUBE)
        namespace = own_namespace(claims_namespace, DEFAULT_CLAIMS_NAMESPACE)
        watch = KubeSource(api, state, on_synced=on_synced, registry=registry, claims_namespace=namespace)
        return LiveModel(state, None, watch.pod_index, watch)
    if cluster not in (SIMULATED, SIMULATED_RACK) and not Path(cluster).exists():
        raise SnapshotError(f"--cluster {cluster}: not 'simulated', 'kube' or an existing snapshot file")
    snap = one_look(cluster)
    # The simulated cluster's pods run nowhere a Prometheus could see them.
    pods = [] if cluster in (SIMULATED, SIMULATED_RACK) else snap.pods
    return LiveModel(snap.cluster(source_name(cluster)), snap.telemetry(telemetry_max_age_s), pods, nodes=snap.nodes)
