"""A recorded kube-scheduler session against the served extender, in process: per pod a filter with every
node name and, when it passed more than one, a prioritize with those (one passed: kube-scheduler binds it
without scoring), then the binding applied through the very watch code
``--cluster kube`` runs (``KubeModel.set_pod``), with now and then a pod finishing (DELETED), a pod
asked about again, and a node relabelled. Every reply's digest and every bind is written down, so a
change to how the answers are made can be held to give the very same answers.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from typing import Any

from extender.cluster.state import ANNOTATION_FREE_GPUS, ANNOTATION_TOPOLOGY, ClusterState
from extender.http.advisor import Advisor
from extender.http.verbs import SchedulerVerbs
from extender.model.machines import bundled_machines
from extender.model.smi_topo import parse_topology_text
from extender.scoring import ScoringPolicy
from extender.sources.invalid import InvalidObjects
from extender.sources.kube_model import KubeModel

NOW = 1_796_000_000.0
MILLI, COUNT = "alibabacloud.com/gpu-milli", "alibabacloud.com/gpu-count"
# (GPUs, milli of each: None for whole GPUs, CPU milli), in turn
SHAPES = [(1, None, 4000), (1, 500, 2000), (0, None, 2000), (2, None, 8000), (1, None, 4000), (1, 250, 1000)]
SHAPES += [(4, None, 16000), (0, None, 500), (1, 500, 2000), (8, None, 32000), (3, None, 4000), (1, 700, 2000)]


def fleet(count: int) -> list[dict[str, Any]]:
    """HGX H100 nodes with their topology (every fourth also with a free report), bare 8-GPU nodes,
    8-GPU nodes shared in the Alibaba convention, and 4-GPU A100 boxes with their topology."""
    h100 = parse_topology_text(bundled_machines()["hgx-h100"]).to_json()
    a100 = parse_topology_text(bundled_machines()["dgx-a100"]).to_json()
    nodes = []
    for i in range(count):
        kind = ("h100", "gpu", "share", "a100")[i % 4]
        capacity = {"cpu": "96", "memory": "393216Mi", "pods": "110"}
        capacity |= {COUNT: "8", MILLI: "8000"} if kind == "share" else {"nvidia.com/gpu": "8"}
        notes = {"h100": {ANNOTATION_TOPOLOGY: h100}, "a100": {ANNOTATION_TOPOLOGY: a100}}.get(kind, {})
        if kind == "h100" and i % 16 == 0:
            notes[ANNOTATION_FREE_GPUS] = json.dumps(
                {"version": 1, "free": [0, 1, 2, 3, 4, 5], "at": "2026-12-06T04:00:00Z"}
            )
        name = f"{kind}-{i:04d}"
        meta = {"name": name, "labels": {"kubernetes.io/hostname": name, "zone": f"z{i % 3}"}, "annotations": notes}
        nodes.append({"metadata": meta, "spec": {}, "status": {"capacity": capacity, "allocatable": dict(capacity)}})
    return nodes


def pod(i: int) -> dict[str, Any]:
    gpus, milli, cpu = SHAPES[i % len(SHAPES)]
    requests = {"cpu": f"{cpu}m", "memory": f"{cpu * 4 // 1000}Gi"}
    meta: dict[str, Any] = {"name": f"p-{i:05d}", "namespace": "ml", "uid": f"uid-{i:05d}"}
    if gpus and milli is None:
        requests["nvidia.com/gpu"] = str(gpus)
    elif gpus:
        meta["annotations"] = {MILLI: str(milli), COUNT: str(gpus)}
    container = {"name": "c", "resources": {"requests": requests, "limits": dict(requests)}}
    return {"metadata": meta, "spec": {"containers": [container], "schedulerName": "gpu-advisor"}, "status": {}}


def bound(obj: dict[str, Any], node: str, i: int) -> dict[str, Any]:
    at = f"2026-12-06T05:{i // 60 % 60:02d}:{i % 60:02d}Z"
    status = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": at}]}
    return {**obj, "spec": {**obj["spec"], "nodeName": node}, "status": status}


def _body(obj: dict[str, Any], names: list[str]) -> bytes:
    """ExtenderArgs as Go's encoder writes it (field order, compact)."""
    return json.dumps({"Pod": obj, "Nodes": None, "NodeNames": names}, separators=(",", ":")).encode()


def _digest(reply: bytes, as_sets: bool) -> str:
    """A reply's digest; ``as_sets``: of what kube-scheduler reads of it (names as a set, scores by host)."""
    if as_sets:
        doc = json.loads(reply)
        if isinstance(doc, dict):
            doc = {k: sorted(v) if isinstance(v, list) else v for k, v in doc.items()}
        else:
            doc = sorted((entry["Host"], entry["Score"]) for entry in doc)
        reply = json.dumps(doc, sort_keys=True).encode()
    return hashlib.sha256(reply).hexdigest()[:20]


def run(
    nodes: int, pods: int, shuffle: random.Random | None = None, as_sets: bool = False, passes: str = "best"
) -> list[list[str]]:
    """Each step: [filter digest, prioritize digest or "", the node bound or ""]. ``shuffle``: every
    filter sends the nodes in a new order, as kube-scheduler's parallel filter does; ``as_sets``: the
    digests are of what kube-scheduler reads (``_digest``)."""
    state = ClusterState("kube")
    model = KubeModel(state, InvalidObjects(), clock=lambda: NOW)
    objects = fleet(nodes)
    model.replace("nodes", objects)
    model.replace("pods", [])
    state.mark_ready(NOW)
    advisor = Advisor(state, None, ScoringPolicy(), clock=lambda: NOW, filter_passes=passes)
    advisor.keep_standing()
    verbs = SchedulerVerbs(advisor)
    names = [n["metadata"]["name"] for n in objects]
    steps: list[list[str]] = []
    placed: list[dict[str, Any]] = []

    async def one(obj: dict[str, Any], i: int, bind: bool = True) -> None:
        sent = names
        if as_sets and i % 3 == 0:  # a node left out, as one kube-scheduler's own filters refuse
            sent = [name for name in names if name != names[i % len(names)]]
        if shuffle is not None:
            sent = shuffle.sample(sent, len(sent))
        reply = (await verbs.filter(_body(obj, sent)))[1]
        passed = json.loads(reply)["NodeNames"] or []
        step = [_digest(reply, as_sets), "", ""]
        steps.append(step)
        if not passed:
            return
        if len(passed) == 1:  # kube-scheduler scores nothing and binds the one node (``best_node``)
            step[2] = passed[0]
        else:
            reply = (await verbs.prioritize(_body(obj, passed)))[1]
            step[1] = _digest(reply, as_sets)
            step[2] = max(json.loads(reply), key=lambda s: s["Score"])["Host"]
        if bind:
            placed.append(bound(obj, step[2], i))
            model.set_pod("MODIFIED", placed[-1])

    async def session() -> None:
        for i in range(pods):
            if i % 7 == 6:  # asked about, not bound (another scheduler took the node's turn), asked again
                await one(pod(i), i, bind=False)
            await one(pod(i), i)
            if i % 11 == 10 and placed:  # a pod finishes: its node frees what it held
                model.set_pod("DELETED", placed.pop(len(placed) // 2))
            if i % 29 == 28:  # a node relabelled: rebuilt with its pods
                node = objects[i % nodes]
                node["metadata"]["labels"]["zone"] = f"z{i}"
                model.set_node("MODIFIED", node)

    asyncio.run(session())
    return steps
