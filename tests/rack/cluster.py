"""A rack-scale test cluster: NVL72 racks beside HGX nodes, and a scheduler loop that binds where the
advisor's filter and scores say, as kube-scheduler would."""

from __future__ import annotations

from typing import Any

from extender.cluster.state import ClusterState
from extender.model.pods import pod_request
from extender.scoring import ScoringPolicy, Verdict, judge_all
from extender.sources.nvl72 import nvl72_rack
from extender.sources.snapshot import Snapshot, parse_snapshot

NOW = 1_796_000_000.0


def rack_and_hgx(racks: tuple[tuple[str, int], ...] = (("4fc6b5a0.1", 18),)) -> Snapshot:
    """NVL72 trays (per rack: its clique and tray count) and two HGX H100 nodes."""
    nodes: list[dict[str, Any]] = []
    for n, (clique, trays) in enumerate(racks):
        nodes += nvl72_rack(prefix=f"rack{n}-tray", trays=trays, clique=clique)
    nodes += [{"name": "hgx-a", "machine": "hgx-h100"}, {"name": "hgx-b", "machine": "hgx-h100"}]
    return parse_snapshot({"nodes": nodes, "pods": []}, now=NOW)


def worker(jobset: str, index: int, workers: int = 8, gpus: int = 4, nvlink: bool = True) -> dict[str, Any]:
    """A JobSet worker pod as the JobSet controller labels it (one pod per Job)."""
    annotations = {"gpu-advisor.io/interconnect": "nvlink"} if nvlink else {}
    labels = {"jobset.sigs.k8s.io/jobset-name": jobset, "jobset.sigs.k8s.io/global-replicas": str(workers)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{jobset}-w-{index}", "namespace": "ml", "labels": labels, "annotations": annotations},
        "spec": {"containers": [{"name": "train", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]},
        "status": {"phase": "Pending"},
    }


def judge(snap: Snapshot, pod: dict[str, Any]) -> list[Verdict]:
    state: ClusterState = snap.cluster("test")
    names = sorted(state.nodes_by_name())
    return judge_all(pod_request(pod), names, state.nodes_by_name(), None, ScoringPolicy(), NOW)


def schedule(snap: Snapshot, pod: dict[str, Any]) -> tuple[str | None, list[Verdict]]:
    """Bind the pod to the best-scored node that passes (the first by name among equals), as
    kube-scheduler would; None when no node passes (the pod waits)."""
    verdicts = judge(snap, pod)
    passing = [v for v in verdicts if v.fits]
    if not passing:
        return None, verdicts
    best = max(passing, key=lambda v: v.score)
    chosen = next(v for v in passing if v.score == best.score)
    bound = {**pod, "spec": {**pod["spec"], "nodeName": chosen.node}}
    bound["status"] = {
        "phase": "Running",
        "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-01T00:00:00Z"}],
    }
    snap.pods.append(bound)
    return chosen.node, verdicts


def two_jobsets_and_a_third_waiting() -> dict[str, Any]:
    """The rack and two HGX nodes after JobSets train-a and train-b (8 four-GPU workers each) were
    scheduled by the advisor, with train-c's first worker pending: a Kubernetes List, as
    ``gpu-advisor snapshot`` writes one (``tests/data/rack/two-jobsets.json``)."""
    snap = rack_and_hgx()
    for jobset in ("train-a", "train-b"):
        for i in range(8):
            schedule(snap, worker(jobset, i))
    pending = worker("train-c", 0)
    items = [*snap.nodes, *snap.pods, pending]
    return {"apiVersion": "v1", "kind": "List", "time": "2026-12-01T00:10:00Z", "items": items}
