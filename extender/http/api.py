"""The /v1 API: dry-run a manifest against the model (or a snapshot), and the node inventory."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field

from extender.advice.dryrun import DryRunAnswer, DryRunError, dry_run
from extender.cluster.cliques import clique_of
from extender.cluster.dra_view import pod_through_claims, workload_and_claims
from extender.cluster.state import NodeState
from extender.errors import GpuAdvisorError
from extender.http.advisor import Advisor
from extender.http.defrag_route import add_defrag_route
from extender.http.dryrun_job import DryRunSetup, has_snapshot, parse_dry_run_body, run_dry_run_job
from extender.http.limits import Limits
from extender.http.offloop import Lane
from extender.http.requests import problem, problem_for, read_body
from extender.http.sandbox import Sandbox
from extender.http.telemetry import GpuLive, gpus_live
from extender.model.readings import TelemetryBoard

__all__ = ["DryRuns", "NodeDetail", "NodeSummary", "build_router"]

log = logging.getLogger(__name__)


class NodeSummary(BaseModel):
    name: str
    product: str | None
    gpus: int = Field(description="nvidia.com/gpu allocatable (time-sliced: replicas)")
    gpus_free: int = Field(description="by the tighter of allocation counts and the agent's last report")
    free_gpus: list[int] | None = Field(description="free physical GPUs (None: topology unknown)")
    mig_profiles: list[str]
    time_sliced: bool
    nvlink_islands: list[list[int]] | None
    nvlink_clique: str | None = Field(
        description="the multi-node NVLink clique the node is in (GFD's nvidia.com/gpu.clique label, else the "
        "agent's topology): a rack's trays share it; None off any NVLink fabric"
    )
    numa_groups: dict[str, list[int]] | None
    fingerprint: str | None
    telemetry_age_s: float | None = Field(description="age of the newest GPU reading (None: none)")
    gpus_live: list[GpuLive] = Field(description="per GPU (and MIG instance): SM %, VRAM, age, holding pod")
    pods: list[str]
    overcommitted: list[str] = Field(
        description="what the pods bound here hold more of than the node has, one line each (empty: not "
        "over-committed): a GPU resource ('nvidia.com/gpu: 10 bound, 8 allocatable'), or one shared GPU "
        "('GPU 1: 1200 milli bound of 1000', 'GPU 0: 120 % of its cores bound')"
    )


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
        "nvlink_clique": clique_of(node),
        "numa_groups": {str(k): v for k, v in topo.numa_groups().items()} if topo else None,
        "fingerprint": topo.fingerprint if topo else None,
        "telemetry_age_s": None if age is None else round(age, 1),
        "gpus_live": gpus_live(node, telemetry, now),
        "pods": [p.key for p in node.pods],
        "overcommitted": list(node.overcommitted),
    }


_DRY_RUN_BODY = {
    "description": "A Pod or workload manifest, or {manifest, snapshot} to judge against a snapshot instead of "
    "the live state. JSON or YAML; YAML aliases count toward the value limit once expanded.",
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string"},
                    "manifest": {"type": "object", "description": "with snapshot: the manifest to judge"},
                    "snapshot": {"type": "object", "description": "nodes (and pods), or a Kubernetes List"},
                },
            }
        },
        "application/yaml": {"schema": {"type": "object"}},
    },
}
_DRY_RUN_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "unreadable body: not JSON or YAML (names the line), nested too deeply, empty"},
    401: {"description": "no valid bearer token (when /v1 requires one)"},
    403: {"description": "the token's user may not use /v1"},
    408: {"description": "the body did not arrive within the body timeout"},
    413: {"description": "the body, its expanded values or its memory need are over a limit (named)"},
    422: {"description": "not judgeable: no pod template, a snapshot over a cap, or over the time budget"},
    503: {"description": "too many dry-runs or request bodies at once; retry"},
}
INLINE_PARSE_BYTES = 256 * 1024  # smaller bodies are read in the server; larger ones in the sandbox


class DryRuns:
    """Dry-runs: a body's snapshot is built and judged in the sandbox (time and memory budget); a bare
    manifest is judged against the live model, off the event loop."""

    def __init__(self, advisor: Advisor, limits: Limits, lane: Lane) -> None:
        self.advisor, self.limits, self.lane = advisor, limits, lane
        self._sandbox: Sandbox | None = None

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:  # made on first use: the app has wired ``advise`` in by then
            setup = DryRunSetup(self.limits, self.advisor.policy, self.advisor.advise)
            limits = self.limits
            self._sandbox = Sandbox(run_dry_run_job, setup, limits.dry_run_seconds, limits.dry_run_memory)
        return self._sandbox

    async def answer(self, body: bytes) -> str:
        now = self.advisor.clock()
        if len(body) <= INLINE_PARSE_BYTES:
            doc = await asyncio.to_thread(parse_dry_run_body, body, self.limits)
            kind, value = await self.sandbox.run(None, doc, now) if has_snapshot(doc) else ("manifest", doc)
        else:
            kind, value = await self.sandbox.run(body, None, now)
        if kind == "answer":
            return str(value)
        return await self.lane.run(lambda: self._live(value, now).model_dump_json())

    def _live(self, manifest: Any, now: float) -> DryRunAnswer:
        advisor = self.advisor
        nodes, memo = advisor.state.nodes_by_name(), advisor._verdict_memo()
        try:
            mix = advisor.learner.current  # the workload mix learned so far weighs what a placement strands
            # A List or a multi-document file: its workload, with the claims it names from the same file.
            manifest, beside = workload_and_claims(manifest)
            if isinstance(manifest, dict):  # GPUs asked through DRA claims the file or the model knows
                manifest = pod_through_claims(pod_through_claims(manifest, beside), advisor.state.dra)
            telemetry, policy, advise = advisor.telemetry, advisor.policy, advisor.advise
            return dry_run(manifest, nodes, telemetry, policy, now, memo, advise, mix, advisor.holding)
        except GpuAdvisorError:
            raise
        except Exception as exc:  # a manifest shaped in a way the model did not foresee: the input's fault
            log.warning("dry-run could not judge a manifest: %s: %s", type(exc).__name__, exc)
            raise DryRunError(f"cannot judge this manifest ({type(exc).__name__}: {exc})") from None

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()


def build_router(advisor: Advisor, dry_runs: DryRuns | None = None) -> APIRouter:
    router = APIRouter(prefix="/v1")
    dry_runs = dry_runs or DryRuns(advisor, Limits(), Lane())

    @router.post(
        "/dry-run",
        tags=["dry-run"],
        response_model=DryRunAnswer,
        openapi_extra={"requestBody": _DRY_RUN_BODY},
        responses=_DRY_RUN_ERRORS,
    )
    async def dry_run_route(request: Request) -> Response:
        try:
            answer = await dry_runs.answer(await read_body(request, dry_runs.limits.dry_run_body))
        except GpuAdvisorError as exc:
            return problem_for(exc)
        return Response(answer, media_type="application/json")

    add_defrag_route(router, advisor, dry_runs.limits, dry_runs.lane)

    @router.get("/nodes", tags=["inventory"], response_model=list[NodeSummary], responses=_AUTH_ERRORS)
    def list_nodes() -> list[dict[str, Any]]:
        now = advisor.clock()
        return [_summary(n, advisor.telemetry, now) for n in sorted(advisor.state.nodes(), key=lambda n: n.name)]

    @router.get(
        "/nodes/{name}",
        tags=["inventory"],
        response_model=NodeDetail,
        responses={404: {"description": "no such node"}, **_AUTH_ERRORS},
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


_AUTH_ERRORS: dict[int | str, dict[str, Any]] = {k: v for k, v in _DRY_RUN_ERRORS.items() if k in (401, 403)}
