"""The PodDisruptionBudgets a defragmentation plan respects, from the same place the cluster came from:
none in the simulated cluster, the ``PodDisruptionBudget`` items of a snapshot file (a Kubernetes List),
or one list of the live cluster's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from extender.sources.cluster_choice import KUBE, SIMULATED, SIMULATED_RACK
from extender.sources.documents import load_document
from extender.sources.snapshot import SnapshotError

__all__ = ["disruption_budgets", "listed_budgets"]


def disruption_budgets(cluster: str, kubeconfig: str | None = None) -> list[dict[str, Any]]:
    if cluster in (SIMULATED, SIMULATED_RACK):
        return []
    if cluster == KUBE:
        return _listed(kubeconfig)
    try:
        doc = load_document(Path(cluster).read_text(encoding="utf-8"))
    except Exception as exc:  # the snapshot itself was read a moment ago; say what failed now
        raise SnapshotError(f"{cluster}: cannot read its PodDisruptionBudgets: {exc}") from None
    items = doc.get("items") if isinstance(doc, dict) else None
    return [dict(i) for i in items or [] if isinstance(i, dict) and i.get("kind") == "PodDisruptionBudget"]


def _listed(kubeconfig: str | None) -> list[dict[str, Any]]:
    from extender.sources.kube import ApiServerError, kube_api

    try:
        core = kube_api(kubeconfig)
    except Exception as exc:  # the client raises many kinds; the user needs the one line
        raise ApiServerError(f"cannot reach the cluster: {exc}") from None
    return listed_budgets(core)


def listed_budgets(core: Any, timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """Every PodDisruptionBudget of the cluster, through ``core``'s client (a CoreV1Api) and credentials."""
    from kubernetes import client

    from extender.sources.kube import ApiServerError, api_error_message

    try:
        found = client.PolicyV1Api(core.api_client).list_pod_disruption_budget_for_all_namespaces(
            _request_timeout=timeout_s
        )
        return [dict(core.api_client.sanitize_for_serialization(item)) for item in found.items]
    except Exception as exc:  # the client raises many kinds; the user needs the one line
        raise ApiServerError(f"cannot list PodDisruptionBudgets: {api_error_message(exc)}") from None
