"""How much work one request may cause: body sizes per endpoint, nesting, expanded values, snapshot
sizes, and the dry-run's time and memory budget — each refused with a status and a message naming it.

Sized to the Deployment's 512 MiB memory limit: JSON parses into roughly five to six times its size in
Python objects, so a 32 MiB extender body peaks near 200 MiB beside a model of 100–150 MiB, and the
bodies held at once are capped (``bodies_in_flight``) so that two such calls cannot stack up.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MIB", "Limits"]

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    # kube-scheduler's calls: NodeNames (nodeCacheCapable, a few hundred KiB at 5,000 nodes) or, without
    # the node cache, a NodeList: 5,000 nodes of ~6 KiB each (managedFields stripped, 50 images listed).
    extender_body: int = 32 * MIB
    # The API server sends at most 3 MiB (its request limit), object and oldObject included.
    admission_body: int = 4 * MIB
    # A manifest, or a manifest with a snapshot of a few thousand nodes in the short form.
    dry_run_body: int = 8 * MIB
    other_body: int = 64 * 1024
    bodies_in_flight: int = 48 * MIB
    # Kubernetes objects nest about 15 levels (managedFields included); 100 leaves room and stays far
    # below Python's recursion limit for every walker downstream.
    max_depth: int = 100
    # Values after YAML aliases are expanded: an alias bomb names a billion from a few hundred bytes.
    max_values: int = 1_000_000
    snapshot_nodes: int = 5_000  # Kubernetes' largest supported cluster
    gpus_per_node: int = 64  # the largest machines carry 16; MIG instances are counted apart
    dry_run_seconds: float = 10.0
    dry_run_memory: int = 192 * MIB  # the dry-run's own process, beside the server's
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0

    def body_cap(self, path: str) -> tuple[int, str]:
        """The body limit of the endpoint at ``path``, and its name for the message."""
        if path.startswith("/scheduler/"):
            return self.extender_body, "extender"
        if path.startswith("/admission/"):
            return self.admission_body, "admission review"
        if path == "/v1/dry-run":
            return self.dry_run_body, "dry-run"
        return self.other_body, "request"
