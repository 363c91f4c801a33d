"""The /v1 API: dry-run a manifest against the model (or a snapshot), and the node inventory."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field

from extender.advice.dryrun import DryRunAnswer, dry_run
from extender.cluster.state import NodeState
from extender.errors import GpuAdvisorError
from extender.http.advisor import Advisor
from extender.http.manifests import read_manifest
from extender.http.requests import problem, problem_for, read_body
from extender.http.telemetry import GpuLive, gpus_live
from extender.model.readings import TelemetryBoard
from extender.scoring import VerdictMemo
from extender.sources.snapshot import SnapshotError, parse_snapshot

__all__ = ["NodeDetail", "NodeSummary", "build_router"]


class NodeSummary(BaseModel):
    name: str
    product: str | None
    gpus: int = Field(description="nvidia.com/gpu allocatable (time-sliced: replicas)")
    gpus_free: int = Field(description="by the tighter of allocation counts and the agent's last report")
    free_gpus: list[int] | None = Field(description="free physical GPUs (None: topology unknown)")
    mig_profiles: list[str]
    time_sliced: bool
    nvlink_islands: list[list[int]] | None
    numa_groups: dict[str, list[int]] | None
    fingerprint: str | None
    telemetry_age_s: float | None = Field(description="age of the newest GPU reading (None: none)")
    gpus_live: list[GpuLive] = Field(description="per GPU (and MIG instance): SM %, VRAM, age, holding pod")
    pods: list[str]


class NodeDetail(NodeSummary):
    topology: dict[str, Any] | None = Field(description="the topology JSON document")
    assumed: dict[str, list[int]] = Field(description="pods bound after the last free-GPU report → predicted GPUs")


def _summary(node: NodeState, telemetry: TelemetryBoard | None, now: float) -> dict[str, Any]:
    topo = node.topology
    age = telemetry.node_age(node.name, now) if telemetry is not None else None
    return {
        "name": node.name,
        "product": node.product,
        "gpus": node.gpu_total,
        "gpus_free": node.free_now,
        "free_gpus": list(node.free_gpus) if node.free_gpus is not None else None,
        "mig_profiles": node.mig_profiles(),
        "time_sliced": node.time_sliced,
        "nvlink_islands": topo.nvlink_islands() if topo else None,
        "numa_groups": {str(k): v for k, v in topo.numa_groups().items()} if topo else None,
        "fingerprint": topo.fingerprint if topo else None,
        "telemetry_age_s": None if age is None else round(age, 1),
        "gpus_live": gpus_live(node, telemetry, now),
        "pods": [p.key for p in node.pods],
    }


_DRY_RUN_BODY = {
    "description": "A Pod or workload manifest, or {manifest, snapshot} to judge against a snapshot instead of "
    "the live state. JSON or YAML.",
    "required": True,
    "content": {
        "application/json": {"schema": {"type": "object"}},
        "application/yaml": {"schema": {"type": "object"}},
    },
}


def _dry_run(advisor: Advisor, doc: Any) -> DryRunAnswer:
    """A manifest against the advisor's model, or ``{manifest, snapshot}`` against that snapshot."""
    manifest, nodes, telemetry = doc, advisor.state.nodes_by_name(), advisor.telemetry
    memo: VerdictMemo | None = advisor._verdict_memo()
    if isinstance(doc, dict) and "manifest" in doc:
        manifest = doc["manifest"]
        if doc.get("snapshot") is not None:
            try:
                snap = parse_snapshot(doc["snapshot"])
            except SnapshotError as exc:
                raise SnapshotError(f"snapshot: {exc}") from None
            nodes = snap.cluster("dry-run").nodes_by_name()
            telemetry, memo = snap.telemetry(advisor.policy.telemetry_max_age_s), None
    mix = advisor.learner.current
    return dry_run(manifest, nodes, telemetry, advisor.policy, advisor.clock(), memo, advisor.advise, mix)


def build_router(advisor: Advisor) -> APIRouter:
    router = APIRouter(prefix="/v1")

    @router.post(
        "/dry-run",
        tags=["dry-run"],
        response_model=DryRunAnswer,
        openapi_extra={"requestBody": _DRY_RUN_BODY},
        responses={400: {"description": "unreadable body (names the line)"}, 422: {"description": "not judgeable"}},
    )
    async def dry_run_route(request: Request) -> Response:
        try:
            answer = _dry_run(advisor, read_manifest(await read_body(request, advisor.max_body_bytes)))
        except GpuAdvisorError as exc:
            return problem_for(exc)
        return Response(answer.model_dump_json(), media_type="application/json")

    @router.get("/nodes", tags=["inventory"], response_model=list[NodeSummary])
    def list_nodes() -> list[dict[str, Any]]:
        now = advisor.clock()
        return [_summary(n, advisor.telemetry, now) for n in sorted(advisor.state.nodes(), key=lambda n: n.name)]

    @router.get(
        "/nodes/{name}", tags=["inventory"], response_model=NodeDetail, responses={404: {"description": "no such node"}}
    )
    def get_node(name: str) -> Any:
        node = advisor.state.node(name)
        if node is None:
            return problem(404, f"no node {name!r} in the advisor's model ({len(advisor.state.nodes())} nodes)")
        detail = _summary(node, advisor.telemetry, advisor.clock())
        detail["topology"] = node.topology.to_dict() if node.topology else None
        detail["assumed"] = {pod: list(gpus) for pod, gpus in node.assumed}
        return detail

    return router
