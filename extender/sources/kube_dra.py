"""One list of the resource.k8s.io/v1 objects DRA GPUs are read from (``extender.cluster.dra_view``),
for explain, diagnose and ``gpu-advisor snapshot`` against the live cluster.

An API server before v1.34 serves no resource.k8s.io/v1 (404), and a role may not grant it (403): the
cluster is then read without DRA, as before. A kubernetes client without ``ResourceV1Api`` (before 34)
cannot ask at all.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

__all__ = ["list_dra"]

log = logging.getLogger(__name__)

# (kind, the ResourceV1Api method that lists it in every namespace)
_LISTS = (
    ("ResourceSlice", "list_resource_slice"),
    ("ResourceClaim", "list_resource_claim_for_all_namespaces"),
    ("ResourceClaimTemplate", "list_resource_claim_template_for_all_namespaces"),
)


def list_dra(api_client: Any) -> list[dict[str, Any]]:
    """Every ResourceSlice, ResourceClaim and ResourceClaimTemplate, as the API server wrote them."""
    resource_api = getattr(client, "ResourceV1Api", None)
    if resource_api is None:
        log.info("this kubernetes client has no resource.k8s.io/v1: DRA GPUs are not read")
        return []
    dra = resource_api(api_client)
    items: list[dict[str, Any]] = []
    for kind, method in _LISTS:
        try:
            resp = getattr(dra, method)(_preload_content=False)
        except ApiException as exc:
            if exc.status in (403, 404):
                log.info("cannot list %ss (%s %s): DRA GPUs are not read", kind, exc.status, exc.reason)
                return []
            raise
        listed = json.loads(resp.data).get("items") or []
        items += [{"apiVersion": "resource.k8s.io/v1", "kind": kind, **item} for item in listed]
    return items
