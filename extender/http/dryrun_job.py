"""The dry-run's heavy half, as it runs in the sandbox process: read the body (when it is large),
bound its shape, build the snapshot's cluster within the node and GPU caps, and judge the manifest.

Everything crosses the process boundary as plain values: a job in, ``("answer", json)`` or
``("manifest", doc)`` out; refusals are raised as gpu-advisor errors and sent back as status and text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extender.advice.dryrun import Advise, dry_run
from extender.errors import InputError
from extender.http.limits import Limits
from extender.http.manifests import read_manifest
from extender.http.shapes import check_shape
from extender.scoring import ScoringPolicy
from extender.scoring.holding import look
from extender.sources.snapshot import SnapshotError, parse_snapshot

__all__ = ["DryRunSetup", "LimitExceeded", "has_snapshot", "parse_dry_run_body", "run_dry_run_job"]


class LimitExceeded(InputError):
    """A snapshot over a size cap (nodes, GPUs per node): 422 naming the cap."""


@dataclass(frozen=True)
class DryRunSetup:
    """What every job shares, sent once when the sandbox starts."""

    limits: Limits
    policy: ScoringPolicy
    advise: Advise | None


def parse_dry_run_body(body: bytes, limits: Limits) -> Any:
    """The manifest (or ``{manifest, snapshot}``) in a body: JSON or YAML, its shape bounded."""
    doc = read_manifest(body)
    check_shape(doc, limits.max_depth, limits.max_values)
    return doc


def has_snapshot(doc: Any) -> bool:
    return isinstance(doc, Mapping) and "manifest" in doc and doc.get("snapshot") is not None


def _snapshot_nodes(snapshot: Any) -> int:
    if not isinstance(snapshot, Mapping):
        return 0
    listed = snapshot.get("items") if "items" in snapshot else snapshot.get("nodes")
    return len(listed) if isinstance(listed, list) else 0


def run_dry_run_job(setup: DryRunSetup, body: bytes | None, doc: Any, now: float) -> tuple[str, Any]:
    """``("answer", json)`` for a dry-run against its own snapshot; ``("manifest", doc)`` when the
    body has no snapshot (the server judges it against the live model)."""
    limits = setup.limits
    if body is not None:
        doc = parse_dry_run_body(body, limits)
    if not has_snapshot(doc):
        return "manifest", doc
    if (count := _snapshot_nodes(doc["snapshot"])) > limits.snapshot_nodes:
        raise LimitExceeded(f"snapshot: {count:,} entries is over the limit of {limits.snapshot_nodes:,} nodes")
    try:
        snap = parse_snapshot(doc["snapshot"])
    except SnapshotError as exc:
        raise SnapshotError(f"snapshot: {exc}") from None
    nodes = snap.cluster("dry-run").nodes_by_name()
    for node in nodes.values():
        gpus = len(node.topology.indices) if node.topology else 0
        if gpus > limits.gpus_per_node:
            cap = limits.gpus_per_node
            raise LimitExceeded(f"snapshot: node {node.name!r} has {gpus} GPUs, over the limit of {cap}")
    telemetry = snap.telemetry(setup.policy.telemetry_max_age_s)
    mix, reserve = look(nodes, snap.pods, setup.policy, now)  # as explain judges against a snapshot
    answer = dry_run(doc["manifest"], nodes, telemetry, setup.policy, now, None, setup.advise, mix, reserve)
    return "answer", answer.model_dump_json()
